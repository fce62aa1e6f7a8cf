"""Forward-mode rules of the op table: the context a JVP rule receives, and shorthands.

Note [JVP rules]
Every ``Op`` declares ``jvp(ctx, *tangents)``, its Jacobian-vector product. ``tangents`` has one
entry per tensor input of the op (in ``apply``'s order): that input's tangent at the level being
computed, or ``None`` where the input has none (a zero tangent). ``ctx`` is a ``JvpContext``:
``ctx.inputs`` the primal input tensors, ``ctx.result`` the primal output (a tuple for ops with
several outputs), ``ctx._args`` the non-tensor arguments (as for VJP rules), ``ctx.level`` the
level. The rule returns the output's tangent (one per output for multi-output ops), ``None``
meaning "no tangent". It is called only when some input has a tangent at that level.

Rules are written with ndgrad ops on Tensors, like VJP rules. While a rule for level ``L`` runs,
only levels below ``L`` are visible (autograd/forward_ad.py, Note [Forward AD]); the primals and
tangents it uses may be dual numbers at those outer levels, and the ops of the rule then
differentiate the rule itself: that is how nested levels give higher derivatives. A rule may
return a tangent that aliases an input's tangent: for ops that are not views the runtime then
copies it (outputs never share tangent memory with inputs unless the op is a view), and a
tangent whose shape is broadcastable to the output is expanded.

Shorthands for the common kinds:

* ``linear``: the op itself applied to the tangents (views, reshapes, reductions, indexing, cat,
  casts ...). For view ops this makes the output's tangent a view of the input's tangent.
* ``elementwise(deriv)``: ``tangent * deriv(ctx)`` for unary ops (``deriv`` returns f'(x)).
* ``bilinear(f)``: ``f(ta, b) + f(a, tb)`` for products (mul, mm, bmm, mv, dot).
* ``zero``: piecewise constant ops (sign, rounding division, fill_): a zero tangent.
* ``not_implemented(name)``: ops without a derivative (floor_divide): PyTorch's error.

Example:
    >>> import ndgrad
    >>> import ndgrad.autograd.forward_ad as fwAD
    >>> from ndgrad.ops.pointwise import EXP
    >>> EXP.jvp is not None
    True
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(ndgrad.tensor([0.0, 1.0]), ndgrad.tensor([1.0, 1.0]))
    ...     fwAD.unpack_dual(x.exp()).tangent
    tensor([1.0000, 2.7183])
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

import numpy as np

from ..tensor import Tensor, _wrap
from ._dispatch import Op, apply

__all__ = ["FW_STATE", "JvpContext", "linear", "elementwise", "bilinear", "zero", "not_implemented",
           "MAKE_DUAL", "FW_PRIMAL"]



class _FwState(threading.local):
    enabled = True                 # off inside a custom Function's forward
    limit: Optional[int] = None    # levels >= limit are hidden (while a level's rule runs)


# Tangent propagation in this thread (autograd/forward_ad.py, Note [Forward AD]): kept here,
# below the ops, so an op can turn it off for its own internal writes (nn_embedding's renorm).
FW_STATE = _FwState()

class JvpContext:
    """What a JVP rule sees of one op call (see Note [JVP rules])."""

    __slots__ = ("_op", "inputs", "result", "_args", "level")

    def __init__(self, op: Op, inputs: tuple, result: Any, args: tuple, level: int) -> None:
        self._op = op
        self.inputs = inputs
        self.result = result
        self._args = args
        self.level = level

    def input_shape(self, i: int) -> tuple:
        """Shape of input ``i``."""
        return self.inputs[i]._data.shape

    def input_dtype(self, i: int) -> np.dtype:
        """NumPy dtype of input ``i``."""
        return self.inputs[i]._data.dtype


def _zeros_like(t: Tensor) -> Tensor:
    return _wrap(np.zeros_like(t._data))


def linear(ctx: JvpContext, *tangents: Optional[Tensor]) -> Any:
    """JVP of an op that is linear in its tensor inputs: the op applied to the tangents (an
    input without tangent contributes zeros)."""
    ts = tuple(t if t is not None else _zeros_like(p) for t, p in zip(tangents, ctx.inputs))
    return apply(ctx._op, ts, tuple(t._data for t in ts), ctx._args)


def elementwise(deriv: Callable[[JvpContext], Tensor]) -> Callable:
    """JVP of a unary elementwise op with derivative ``deriv(ctx)``: ``tangent * f'(x)``."""
    def jvp(ctx: JvpContext, t: Tensor) -> Tensor:
        return t * deriv(ctx)
    return jvp


def bilinear(f: Callable[[Tensor, Tensor], Tensor]) -> Callable:
    """JVP of an op bilinear in its two inputs: ``f(ta, b) + f(a, tb)``."""
    def jvp(ctx: JvpContext, ta: Optional[Tensor], tb: Optional[Tensor]) -> Tensor:
        a, b = ctx.inputs
        out = f(ta, b) if ta is not None else None
        if tb is not None:
            r = f(a, tb)
            out = r if out is None else out + r
        assert out is not None          # called with at least one tangent
        return out
    return jvp


def zero(ctx: JvpContext, *tangents: Optional[Tensor]) -> Any:
    """JVP of a piecewise constant op: zeros (PyTorch's tangent of sign, floor division ...)."""
    r = ctx.result
    if isinstance(r, tuple):
        return tuple(_zeros_like(o) for o in r)
    return _zeros_like(r)


def not_implemented(name: str) -> Callable:
    """JVP of an op without a derivative: raises PyTorch's error."""
    def jvp(ctx: JvpContext, *tangents: Optional[Tensor]) -> Any:
        raise NotImplementedError(f"Trying to use forward AD with {name} that does not support "
                                  "it.")
    return jvp


def _fw_primal_jvp(ctx: JvpContext, t: Tensor) -> Optional[Tensor]:
    # The primal of ``unpack_dual(x, level=L)`` has no tangent at L; other levels carry over.
    return None if ctx.level == ctx._args[0] else linear(ctx, t)


# The aliases made by make_dual and unpack_dual(...).primal (autograd/forward_ad.py): views of
# their input, with PyTorch's node names. Their gradient passes through unchanged.
MAKE_DUAL = Op("_make_dual", "ViewBackward0", lambda x: x.view(), lambda ctx, g: g, view=True,
               jvp=linear)
FW_PRIMAL = Op("_fw_primal", "Identity", lambda x, level: x.view(), lambda ctx, g: g,
               args=("level",), view=True, jvp=_fw_primal_jvp,
               full_name="torch::autograd::Identity")
