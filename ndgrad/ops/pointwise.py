"""Elementwise ops: arithmetic, unary math, comparisons, where/clamp/maximum/minimum.

Each op is one ``Op`` declaration (forward on ndarrays, VJP with ndgrad ops, JVP where it is one
line). Broadcasting is undone by the engine from the inputs' recorded shapes
(autograd/engine.py ``_fix_gradient``), so rules return full-shape gradients.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x + 3 * x).sum().backward()
    >>> x.grad
    tensor([5., 7.])
"""

from __future__ import annotations

import builtins
import sys
import warnings
from typing import Any, Callable, Optional

import numpy as np

from .. import _dtype, _layout, _unsigned
from .. import _aligned
from .._warn import warn_user_once
from .._aligned import owns_memory
from .._refcounts import SOLE_REFERENCE_TESTS
from .._layout import is_non_overlapping_and_dense
from ..autograd import accumulate_grad as _accumulate_grad
from .. import _meta
from .._meta import MetaArray as _MetaArray
from ..tensor import META_COPY_MSG, Tensor, _wrap, check_device
from ..tensor import device as _device
from ._batching import call as _bcall
from ._batching import marked as _bmarked
from . import _dispatch, _ties
from ._dispatch import Op, apply
from ._workspace import zeros_operand
from ._jvp import bilinear, elementwise, linear, not_implemented, zero
from ._util import (broadcast_error, check_broadcast, category, is_scalar, as_scalar, promote_pair,
                    promote_scalar, scalar_operand, to_float, to_tensor)

_FLOAT = _dtype._FLOAT
_F16 = np.dtype(np.float16)
_BF16 = _dtype.bfloat16.np
_FLOATING = frozenset(d.np for d in _dtype._ALL if d.is_floating_point or d.is_complex)


def _c(t: Tensor) -> Tensor:
    """Conjugate for complex tensors, identity otherwise (PyTorch's complex gradient rule)."""
    return t.conj() if t._data.dtype.kind == "c" else t


# Note [Raw backward rules] (ops/_dispatch.py): the ``raw=`` rules below compute what the Tensor
# rules compute, with the same NumPy calls, on arrays of one float dtype.
_ndarray = np.ndarray
_mul = np.multiply


# Note [Multiplying by a broadcast one]
# A loss reduced by a full sum (``loss.sum()``, ``(g * g).sum()``) hands its seed on as a
# broadcast view of one number (sum's backward, ``broadcast_view`` in ops/shape.py): every
# element is the same 1.0, all strides 0. Multiplying by it is the identity, bit for bit
# (``x * 1.0 == x`` for every float, signed zeros, infinities and NaNs included), so the rules
# that multiply by such a gradient (tanh's backward, its double backward, ``x * x``) skip that
# pass: a gradient penalty's create_graph backward and the backward through it make three
# fewer arrays. Both the raw and the Tensor rule test it (the Tensor rule through the op's
# forward), so they still compute the same bits. The test costs ~0.3 µs, so small arrays
# (below ``_ONE_MIN_SIZE`` elements) do not ask.
_ONE_MIN_SIZE = 1024


def _is_broadcast_one(g: Any) -> bool:
    """``g`` (an ndarray of a real floating dtype) is one 1.0 broadcast over every element
    (Note [Multiplying by a broadcast one])."""
    return (g.size >= _ONE_MIN_SIZE and not any(g.strides) and g.dtype.kind == "f"
            and g.item(0) == 1.0)


def _mul_into(t: Any, g: np.ndarray) -> Any:
    """``t * g`` for a temporary ``t`` the caller made: in place when shapes allow and the
    array is large enough for the saved allocation to outweigh ``out=``'s call cost."""
    if t.__class__ is _ndarray and t.size >= 16384 and t.shape == g.shape:
        return _mul(t, g, out=t)
    return _mul(t, g)


# ---------------------------------------------------------------------------- binary arithmetic
def _add_vjp(ctx, g):
    alpha = ctx._args[0] if ctx._args else 1
    return g, (g if alpha == 1 else g * alpha if ctx.needs_input_grad(1) else None)


def _sub_vjp(ctx, g):
    # ``-g`` only when ``other`` gets a gradient (``x - target``: one pass saved)
    alpha = ctx._args[0] if ctx._args else 1
    if not ctx.needs_input_grad(1):
        return g, None
    return g, (-g if alpha == 1 else g * (-alpha))


# Note [Tensor-scalar forwards keep the tensor's dtype]
# By the time a Python scalar reaches a ``*_S`` forward, the array already has the result dtype
# (``promote_scalar``). NumPy may still change it: bool + int gives int64 and ml_dtypes'
# bfloat16 with a Python float gives float32, so these forwards cast back.
def _like(a: np.ndarray, r: Any) -> np.ndarray:
    return r if r.dtype == a.dtype else r.astype(a.dtype)


# Note [Scalars as cached 0-d arrays]
# NumPy 2 handles a Python scalar operand (NEP 50 "weak" scalar) noticeably slower than a 0-d
# array of the array's own dtype (0.6 vs 0.33 µs for a (16,) float32 array), and the result is
# the same: the weak scalar is cast to the array's dtype either way. For floating point arrays
# the scalar ops below use cached read-only 0-d arrays; the ops' arguments stay Python scalars.
# The cache is one dict per dtype keyed by the number: an int and a float that compare equal
# are the same real number and give the same 0-d array; a complex number is not cached for a
# real dtype (1+0j == 1 must not find the real array).
_SCALARS: dict = {}       # numpy dtype -> {number: read-only 0-d array}
_n_scalars = [0]


def _s(a: np.ndarray, s: Any) -> Any:
    cache = _SCALARS.get(a.dtype)
    if cache is not None:
        t = type(s)
        if t is float or t is int:
            z = cache.get(s)
            if z is not None:
                return z
    return _s_slow(a, s)


def _s_slow(a: np.ndarray, s: Any) -> Any:
    dt = a.dtype
    if dt not in _FLOATING or type(s) is bool or s == 0 or s != s:
        return s           # -0.0 == 0.0 and NaN != NaN: such keys would alias or never hit
    if type(s) is complex and dt.kind != "c":
        return s
    if type(s) is not float and type(s) is not int:
        z = np.array(s, dtype=dt)      # another number type: converted, not cached
        z.flags.writeable = False
        return z
    if _n_scalars[0] > 4096:
        _SCALARS.clear()
        _n_scalars[0] = 0
    # float16/bfloat16: the number through float32 as PyTorch converts it (Note [Double to
    # half]; add/sub compute in float32 with the rounded scalar)
    z = np.array(np.float32(s) if dt is _F16 or dt is _BF16 else s, dtype=dt)
    z.flags.writeable = False
    _SCALARS.setdefault(dt, {})[s] = z
    _n_scalars[0] += 1
    return z


def _add_s_fwd(a, s, alpha=1):
    r = a + _s(a, s) if alpha == 1 else a + s * alpha
    return r if r.dtype is a.dtype else _like(a, r)


def _sub_s_fwd(a, s, alpha=1):
    r = a - _s(a, s) if alpha == 1 else a - s * alpha
    return r if r.dtype is a.dtype else _like(a, r)


def _rsub_s_fwd(a, s, alpha=1):
    return _like(a, _s(a, s) - a if alpha == 1 else s - a * alpha)


def _alpha_fwd(op, a, b, alpha):
    """``op(a, b * alpha)``. float16/bfloat16 as PyTorch's kernel: ``alpha`` rounded to the
    dtype, then one fused multiply-add in float32 (exact in float64 for these widths, then
    rounded to float32), then the dtype (ml_dtypes' bfloat16 times a Python float would be
    float32)."""
    if a.dtype in _dtype.HALF_NP and a.dtype == b.dtype:
        al = float(np.asarray(alpha, a.dtype))
        return op(a.astype(np.float64), b.astype(np.float64) * al).astype(
            np.float32).astype(a.dtype)
    return op(a, b * alpha)


def _add_fwd(a, b, alpha=1):
    return a + b if alpha == 1 else _alpha_fwd(np.add, a, b, alpha)


def _sub_fwd(a, b, alpha=1):
    if alpha != 1:
        return _alpha_fwd(np.subtract, a, b, alpha)
    if a.__class__ is _ndarray and b.__class__ is _ndarray and a.nbytes >= _ALIGN_MIN:
        # a large difference often feeds a product (a loss's ``y - t``): Note [Aligned arrays]
        return _aligned.binary(_np_subtract, a, b)
    return a - b


_np_subtract = np.subtract
_ALIGN_MIN = _aligned.MIN_BYTES


def _add_jvp(ctx, ta, tb, sign=1):
    alpha = (ctx._args[0] if ctx._args else 1) * sign
    if tb is not None and alpha != 1:
        tb = -tb if alpha == -1 else tb * alpha
    if ta is None:
        return tb
    return ta if tb is None else ta + tb


def _sum_to_array(g: np.ndarray, shape: tuple) -> np.ndarray:
    """``g`` summed down to the broadcast input's ``shape``, with the NumPy call the engine's
    ``_fix_gradient`` makes (``sum_to_checked``): bit for bit its result."""
    gs = g.shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    if gs[lead:] == shape:
        # leading dimensions only (a bias): the same reduction without keepdims and reshape
        return np.add.reduce(g, axis=tuple(range(lead)))
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and gs[lead + i] != 1)
    return np.add.reduce(g, axis=dims, keepdims=True).reshape(shape)


def _add_raw(ctx, g, saved):
    # _add_vjp on arrays: ``g`` passes through (Note [Raw backward rules]: returning ``g``
    # itself hands on the incoming Tensor, as the Tensor rule does); a broadcast operand gets
    # the sum the engine would make, here without a dispatch.
    if ctx._args and ctx._args[0] != 1:
        return NotImplemented
    meta = ctx._input_meta
    gs = g.shape
    s0, s1 = meta[0][0], meta[1][0]
    if s0 == gs and s1 == gs:
        return g, g
    if ctx._post_hooks:
        return NotImplemented      # a post hook sees the Tensor rule's unreduced gradients
    n0, n1 = ctx.needs_input_grads()
    return (_sum_to_array(g, s0) if n0 else None, _sum_to_array(g, s1) if n1 else None)


def _sub_raw(ctx, g, saved):
    # _sub_vjp on arrays: ``g`` and ``-g`` (only when ``other`` needs it), then as _add_raw.
    if ctx._args and ctx._args[0] != 1:
        return NotImplemented
    meta = ctx._input_meta
    if ctx._post_hooks and (meta[0][0] != g.shape or meta[1][0] != g.shape):
        return NotImplemented      # as in _add_raw
    n0, n1 = ctx.needs_input_grads()
    return (_sum_to_array(g, meta[0][0]) if n0 else None,
            _sum_to_array(np.negative(g), meta[1][0]) if n1 else None)


def _pass_raw(ctx, g, saved):
    return g


ADD = Op("add", "AddBackward0", _add_fwd, _add_vjp, inputs=("self", "other"), args=("alpha",),
         jvp=_add_jvp, raw=_add_raw)
ADD_S = Op("add", "AddBackward0", _add_s_fwd,
           lambda ctx, g: g, args=("other", "alpha"), pad=1, jvp=lambda ctx, t: t,
           raw=_pass_raw)
SUB = Op("sub", "SubBackward0", _sub_fwd, _sub_vjp, inputs=("self", "other"), args=("alpha",),
         jvp=lambda ctx, ta, tb: _add_jvp(ctx, ta, tb, -1), raw=_sub_raw)
SUB_S = Op("sub", "SubBackward0", _sub_s_fwd,
           lambda ctx, g: g, args=("other", "alpha"), pad=1, jvp=lambda ctx, t: t,
           raw=_pass_raw)
RSUB_S = Op("rsub", "RsubBackward1", _rsub_s_fwd,
            lambda ctx, g: -g if ctx._args[1] == 1 else g * (-ctx._args[1]),
            args=("other", "alpha"),
            jvp=lambda ctx, t: -t if ctx._args[1] == 1 else t * (-ctx._args[1]))


def _mul_vjp(ctx, g):
    b, a = ctx.saved
    return (g * _c(b) if ctx.needs_input_grad(0) else None,
            g * _c(a) if ctx.needs_input_grad(1) else None)


def _mul_raw(ctx, g, saved):
    b, a = saved
    n0, n1 = ctx.needs_input_grads()
    if a is b and n0 and n1:
        edges = ctx.next_functions
        if edges[0] == edges[1]:
            # ``x * x``: both gradients are g * x and meet in one input buffer, where the engine
            # would sum them (``t + t``, a new array); one product serves both and the sum is
            # made here, in place, with nothing on the second edge (the buffer holds the same),
            # unless a post hook of the node would see the two gradients
            if not ctx._post_hooks and _is_broadcast_one(g) and g.shape == a.shape:
                # Note [Multiplying by a broadcast one]: ``1.0 * x + 1.0 * x`` is ``x + x``
                return np.add(a, a), None
            # it feeds products: Note [Aligned arrays]
            t = _aligned.binary(_mul, g, a) if a.nbytes >= _ALIGN_MIN else _mul(g, a)
            if ctx._post_hooks:
                return t, t
            return (np.add(t, t, out=t) if t.__class__ is _ndarray else t + t), None
    return (_mul(g, b) if n0 else None, _mul(g, a) if n1 else None)


MUL = Op("mul", "MulBackward0", np.multiply, _mul_vjp, saves=("other", "self"),
         save_if=((0,), (1,)), inputs=("self", "other"), jvp=bilinear(lambda a, b: a * b),
         raw=_mul_raw)


def _scalar_conj(s):
    return s.conjugate() if type(s) is complex else s


# Note [Half times a Python number]
# PyTorch multiplies and divides a float16/bfloat16 tensor by a Python number in float32 with
# the number itself in float32 (its CPU kernels' scalar operand), not with the number rounded
# to the tensor's dtype: ``half * 0.1`` differs between the two in ~35% of elements (bfloat16
# ~20%). add and sub round the number to the dtype first (``_s``).
def _mul_s_fwd(a, s):
    dt = a.dtype
    if (dt is _F16 or dt is _BF16) and type(s) is float:
        return np.multiply(a.astype(np.float32), np.float32(s)).astype(dt)
    r = np.multiply(a, _s(a, s))
    return r if r.dtype is dt else _like(a, r)


def _div_s_fwd(a, s):
    dt = a.dtype
    if (dt is _F16 or dt is _BF16) and type(s) is float:
        return np.true_divide(a.astype(np.float32), np.float32(s)).astype(dt)
    r = np.true_divide(a, _s(a, s))
    return r if r.dtype is dt else _like(a, r)


# The scalar is saved (and freed after backward), as PyTorch saves the wrapped number: a second
# backward through x * 2 raises like any other op that saved something.
def _mul_s_raw(ctx, g, saved):
    s = saved[0]
    t = type(s)
    # g * s takes the operator fast path for these (MUL_S's forward on g)
    return _mul_s_fwd(g, s) if t is float or t is int else NotImplemented


def _div_s_raw(ctx, g, saved):
    s = saved[0]
    t = type(s)
    return _div_s_fwd(g, s) if t is float or t is int else NotImplemented


MUL_S = Op("mul", "MulBackward0", _mul_s_fwd,
           lambda ctx, g: g * _scalar_conj(ctx.saved[0]),
           args=("other",), saves=("other",), pad=1, jvp=lambda ctx, t: t * ctx._args[0],
           raw=_mul_s_raw)


def _div_vjp(ctx, g):
    b, a = ctx.saved
    cb = _c(b)
    ga = g / cb if ctx.needs_input_grad(0) else None
    gb = -g * _c(a) / (cb * cb) if ctx.needs_input_grad(1) else None
    return ga, gb


def _div_raw(ctx, g, saved):
    b, a = saved
    ga = np.true_divide(g, b) if ctx.needs_input_grad(0) else None
    gb = (np.true_divide(_mul(np.negative(g), a), _mul(b, b)) if ctx.needs_input_grad(1)
          else None)
    return ga, gb


def _div_jvp(ctx, ta, tb):
    # d(a / b) = ta / b - tb * (a / b) / b
    b = ctx.inputs[1]
    out = ta / b if ta is not None else None
    if tb is not None:
        r = -(tb * ctx.result) / b
        out = r if out is None else out + r
    return out


DIV = Op("div", "DivBackward0", np.true_divide, _div_vjp, saves=("other", "self"),
         save_if=(None, (1,)), inputs=("self", "other"), jvp=_div_jvp, raw=_div_raw)
DIV_S = Op("div", "DivBackward0", _div_s_fwd,
           lambda ctx, g: g / _scalar_conj(ctx.saved[0]),
           args=("other",), saves=("other",), pad=1, jvp=lambda ctx, t: t / ctx._args[0],
           raw=_div_s_raw)
def _reciprocal_fwd(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":     # torch divides 1 / z (Smith's algorithm, as NumPy's divide):
        return np.divide(x.dtype.type(1), x)    # 1/0 = inf+nanj, 1/(3+0j) has imag +0
    return np.reciprocal(x)


RECIPROCAL = Op("reciprocal", "ReciprocalBackward0", _reciprocal_fwd,
                lambda ctx, g: -g * _c(ctx.saved[0] * ctx.saved[0]), saves=("result",),
                jvp=elementwise(lambda ctx: -(ctx.result * ctx.result)))


def _zeros_of(t: Tensor) -> Tensor:
    """Zeros shaped like ``t``, outside the graph (a gradient that is identically zero)."""
    z = _wrap(np.zeros_like(t._data))
    z._blevel = t._blevel          # batched like ``t`` (Note [Batched backward])
    return z


def _pow_s_vjp(ctx, g):
    (x,) = ctx.saved
    e = ctx._args[0]
    if e == 0:
        return _zeros_of(g)
    # No shortcut for e == 1: x ** 0 keeps x in the graph, so double backward gives zeros
    # (not None) for x, as in PyTorch.
    if e == 2:
        return g * _c(x * 2)
    return g * _c(e * x ** (e - 1))


def _pow_fwd(a, e):
    if isinstance(e, int) and not isinstance(e, bool) and a.dtype.kind in "iu" and e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    dt = a.dtype
    if dt is _F16 or dt is _BF16:              # the number through float32 (Note [Double to half])
        e = _dtype.number_in(e, dt)
    return _like(a, np.power(a, e))


def _int_power(a: Any, e: np.ndarray) -> np.ndarray:
    """Integer ``a ** e`` where ``e`` may be negative, with C's meaning as PyTorch computes it:
    ``1 ** e`` is 1, ``(-1) ** e`` is 1 or -1, any other base gives 0."""
    neg = e < 0
    if not neg.any():
        return np.power(a, e)
    out = np.power(a, np.where(neg, 0, e).astype(e.dtype, copy=False))
    sign = np.where(e % 2 == 0, 1, -1)
    small = np.where(a == 1, 1, np.where(a == -1, sign, 0))
    return np.where(neg, small, out).astype(out.dtype, copy=False)


def _pow_tt_fwd(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    return _int_power(a, e) if e.dtype.kind == "i" else np.power(a, e)


def _rpow_fwd(e: np.ndarray, s: Any) -> np.ndarray:
    if e.dtype.kind == "i":
        return _like(e, _int_power(s, e))
    return _like(e, np.power(_dtype.number_in(s, e.dtype), e))


def _pow_tt_vjp(ctx, g):
    b, a, result = ctx.saved
    ga = gb = None
    if ctx.needs_input_grad(0):
        ga = g * _c(where(b == 0, 0.0, b * a ** (b - 1)))
    if ctx.needs_input_grad(1):
        # d/db a**b = a**b * log(a); defined as 0 where a == 0 and b >= 0 (PyTorch's choice).
        safe = where((a == 0) & _nonnegative(b), 0.0, result * a.log())
        gb = g * _c(safe)
    return ga, gb


def _nonnegative(e: Tensor) -> Tensor:
    """``e >= 0``; for complex ``e``: real and non-negative."""
    if e._data.dtype.kind != "c":
        return e >= 0
    return _wrap((e._data.imag == 0) & (e._data.real >= 0))


def _rpow_vjp(ctx, g):
    e, result = ctx.saved
    base = ctx._args[0]
    if base == 0:
        # d/de 0**e = 0**e * log(0): -inf/nan for e < 0, defined as 0 where e >= 0 (PyTorch).
        return where(e >= 0, 0.0, g * result * float("-inf"))
    return g * _c(result * float(np.log(base)) if not isinstance(base, complex)
                  else result * complex(np.log(base)))


def _pow_s_jvp(ctx, t):
    x = ctx.inputs[0]
    e = ctx._args[0]
    if e == 0:
        return _zeros_of(t)
    if e == 2:
        return t * (x * 2)
    return t * (e * x ** (e - 1))


def _pow_tt_jvp(ctx, ta, tb):
    a, b = ctx.inputs
    out = ta * where(b == 0, 0.0, b * a ** (b - 1)) if ta is not None else None
    if tb is not None:
        r = tb * where((a == 0) & _nonnegative(b), 0.0, ctx.result * a.log())
        out = r if out is None else out + r
    return out


def _rpow_jvp(ctx, t):
    base = ctx._args[0]
    if base == 0:
        return _zeros_of(t)
    log = complex(np.log(base)) if isinstance(base, complex) else float(np.log(base))
    return t * (ctx.result * log)


POW_S = Op("pow", "PowBackward0", _pow_fwd, _pow_s_vjp, saves=("self",), args=("exponent",),
           jvp=_pow_s_jvp)
POW = Op("pow", "PowBackward1", _pow_tt_fwd, _pow_tt_vjp, saves=("exponent", "self", "result"),
         inputs=("self", "exponent"), jvp=_pow_tt_jvp)
RPOW = Op("pow", "PowBackward2", _rpow_fwd, _rpow_vjp,
          saves=("exponent", "result"), inputs=("exponent",), args=("self",), jvp=_rpow_jvp)


def _not_implemented_for(kernel: str, arr: np.ndarray, kinds: str) -> None:
    """PyTorch has no kernel ``kernel`` for these dtype kinds (``"b"`` bool, ``"c"`` complex)."""
    if arr.dtype.kind in kinds:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_dtype._FROM_NP[arr.dtype]._torch_name}'")


def _check_bool_sub(a: Any, b: Any) -> None:
    """PyTorch refuses ``-`` when an operand is a bool tensor or a Python bool."""
    n = sum(1 for x in (a, b) if (x._data.dtype == np.bool_ if isinstance(x, Tensor)
                                  else isinstance(x, (bool, np.bool_))))
    if n == 2:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if n == 1:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _check_alpha(alpha: Any, dt: np.dtype) -> Any:
    """PyTorch's rules for ``alpha`` of add/sub given the result dtype ``dt``; returns alpha
    converted to ``dt`` (checked: Note [Python numbers into a dtype])."""
    if isinstance(alpha, (bool, np.bool_)):
        if dt != np.bool_:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, (float, np.floating)) and dt.kind in "iub":
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    elif isinstance(alpha, complex) and dt.kind != "c":
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                           "number.")
    if isinstance(alpha, Tensor) or not is_scalar(alpha):
        return alpha
    return _dtype.scalar_to(alpha, _dtype._FROM_NP[dt])


def _alpha_arg(alpha: Any) -> Any:
    """``None`` for the default alpha (1, not True), else alpha."""
    return None if alpha == 1 and not isinstance(alpha, (bool, np.bool_)) else alpha


def _binary(a: Any, b: Any, tt: Op, ts: Optional[Op], name: str, true_div: bool = False,
            alpha: Any = None) -> Any:
    """Dispatch ``a <op> b`` with ``a`` a Tensor: tensor-tensor or tensor-scalar form."""
    if tt is SUB:
        _check_bool_sub(a, b)
    if isinstance(b, Tensor):
        ad, bd = promote_pair(a, b)
        if true_div and category(ad) < _FLOAT:
            ad, bd = to_float(ad), to_float(bd)
        if alpha is not None:
            alpha = _check_alpha(alpha, ad.dtype)
        try:
            if alpha is None:
                return apply(tt, (a, b), (ad, bd))
            return apply(tt, (a, b), (ad, bd), (alpha,))
        except ValueError:
            try:
                np.broadcast_shapes(ad.shape, bd.shape)
            except ValueError:
                raise broadcast_error(ad.shape, bd.shape) from None
            raise
    if is_scalar(b):
        assert ts is not None           # every op with scalar operands has its Scalar form
        b = as_scalar(b)
        ad = promote_scalar(a._data, b)
        if true_div and category(ad) < _FLOAT:
            ad = to_float(ad)
        ad, b = scalar_operand(ad, b)
        if alpha is None:
            return apply(ts, (a,), (ad,), (b,))
        alpha = _check_alpha(alpha, ad.dtype)
        if ad.dtype.kind in "iu":     # integers: b * alpha wraps around as in PyTorch
            b, alpha = _dtype.wrap_int(b * alpha, _dtype._FROM_NP[ad.dtype]), 1
        return apply(ts, (a,), (ad,), (b, alpha))
    if isinstance(b, (np.ndarray, list, tuple)):
        return _binary(a, to_tensor(b), tt, ts, name, true_div, alpha)
    return NotImplemented


# Note [Sparse arithmetic forms]
# The function and method forms of add/sub/rsub/mul/div with a sparse COO operand follow torch
# (ops/sparse_coo.py ``binary``): sparse results where torch's are sparse (sparse (+|-)
# sparse, sparse * anything, sparse / number), torch's errors where it refuses (sparse (+|-)
# dense, a dense or sparse divisor, a sparse divisor of a number), the dense op for dense
# (+|-) sparse. The operators reach the same rules through SparseTensor's methods. Bound by
# ops/sparse_coo.py, which imports this module.
_SPARSE: Any = None
_sparse_binary: Any = None


def _raise_if_notimpl(r: Any, a: Any, b: Any, name: str) -> Any:
    if r is NotImplemented:
        raise TypeError(f"{name}(): unsupported operand types '{type(a).__name__}' and "
                        f"'{type(b).__name__}'")
    return r


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other``, broadcasting, with PyTorch's type promotion."""
    if input.__class__ is _SPARSE or other.__class__ is _SPARSE:  # Note [Sparse arithmetic forms]
        r = _sparse_binary("add", input, other, alpha)
        if r is not NotImplemented:
            return r
    if not isinstance(input, Tensor):
        if alpha != 1 or not isinstance(other, Tensor):
            # a number first operand is wrapped into a 0-d tensor (alpha scales ``other``)
            input = to_tensor(as_scalar(input))
        else:
            input, other = other, input
    a = _alpha_arg(alpha)
    if a is None:
        return _raise_if_notimpl(_binary(input, other, ADD, ADD_S, "add"), input, other, "add")
    return _raise_if_notimpl(_binary(input, other, ADD, ADD_S, "add", alpha=a), input, other,
                             "add")


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other``."""
    if input.__class__ is _SPARSE or other.__class__ is _SPARSE:  # Note [Sparse arithmetic forms]
        r = _sparse_binary("sub", input, other, alpha)
        if r is not NotImplemented:
            return r
    if not isinstance(input, Tensor):
        if isinstance(other, Tensor) and is_scalar(input):
            return rsub(other, input, alpha=alpha)
        input = to_tensor(input)
    a = _alpha_arg(alpha)
    if a is None:
        return _raise_if_notimpl(_binary(input, other, SUB, SUB_S, "sub"), input, other, "sub")
    return _raise_if_notimpl(_binary(input, other, SUB, SUB_S, "sub", alpha=a), input, other,
                             "sub")


def rsub(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input``."""
    if input.__class__ is _SPARSE or other.__class__ is _SPARSE:  # Note [Sparse arithmetic forms]
        r = _sparse_binary("rsub", input, other, alpha)
        if r is not NotImplemented:
            return r
    if isinstance(other, Tensor):
        return sub(other, input, alpha=alpha)
    _check_bool_sub(input, other)
    ad, other = scalar_operand(input._data, as_scalar(other))
    if not (alpha == 1 and not isinstance(alpha, (bool, np.bool_))):
        alpha = _check_alpha(alpha, ad.dtype)
    return apply(RSUB_S, (input,), (ad,), (other, alpha))


def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product."""
    if input.__class__ is _SPARSE or other.__class__ is _SPARSE:  # Note [Sparse arithmetic forms]
        r = _sparse_binary("mul", input, other)
        if r is not NotImplemented:
            return r
    if not isinstance(input, Tensor):
        input, other = other, input
        if not isinstance(input, Tensor):
            input = to_tensor(input)
    return _raise_if_notimpl(_binary(input, other, MUL, MUL_S, "mul"), input, other, "mul")


def div(input: Any, other: Any, *, rounding_mode: Optional[str] = None) -> Tensor:
    """True division (``rounding_mode=None``), or ``'trunc'``/``'floor'`` (not differentiable)."""
    if input.__class__ is _SPARSE or other.__class__ is _SPARSE:  # Note [Sparse arithmetic forms]
        r = _sparse_binary("div", input, other, 1, rounding_mode)
        if r is not NotImplemented:
            return r
    if rounding_mode is not None:
        if rounding_mode not in ("floor", "trunc"):
            raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or "
                               f"'floor' but found '{rounding_mode}'")
        return _rounded_div(DIV_MODE, input, other, (rounding_mode,))
    if not isinstance(input, Tensor):
        if isinstance(other, Tensor) and is_scalar(input):
            return reciprocal(other) * input
        input = to_tensor(input)
    return _raise_if_notimpl(_binary(input, other, DIV, DIV_S, "div", true_div=True), input,
                             other, "div")


def _rounded_div(op: Op, input: Any, other: Any, args: tuple) -> Tensor:
    """Apply a rounded division ``op``; a Python-scalar operand is wrapped into a tensor that
    takes part in type promotion as a scalar (``int32_tensor // 2`` stays int32)."""
    if is_scalar(input) and isinstance(other, Tensor):
        bd, s = scalar_operand(other._data, as_scalar(input))
        # a number first is rounded to the dtype (float16/bfloat16: through float32)
        input = _wrap(np.asarray(_dtype.number_in(s, bd.dtype), dtype=bd.dtype))
        input._wrapped_number = True
        ad = input._data
    elif is_scalar(other) and isinstance(input, Tensor):
        ad, s = scalar_operand(input._data, as_scalar(other))
        # float16/bfloat16 divided by a Python float: in float32, the number in float32
        low = ad.dtype in _LOWP and type(s) is float
        other = _wrap(np.asarray(s, dtype=np.float32 if low else ad.dtype))
        other._wrapped_number = True
        bd = other._data
    else:
        input, other = to_tensor(input), to_tensor(other)
        ad, bd = promote_pair(input, other)
    _not_implemented_for(f"div_{args[0]}_cpu", ad, "bc")
    if ad.dtype.kind in "iu" and bd.size and (bd == 0).any() and np.broadcast_shapes(
            ad.shape, bd.shape).count(0) == 0:
        raise RuntimeError("ZeroDivisionError")     # PyTorch's integer division by zero
    tensors: tuple = (input, other)
    # With neither requiring grad nothing is recorded: both stay inputs (forward AD sees both).
    if op is FLOOR_DIVIDE and input._requires_grad != other._requires_grad:
        tensors = (other,) if other._requires_grad else (input,)
        op = FLOOR_DIVIDE_1
    try:
        return apply(op, tensors, (ad, bd), args)
    except ValueError:
        raise broadcast_error(ad.shape, bd.shape) from None


def floor_divide(input: Any, other: Any) -> Tensor:
    """``input // other`` rounded towards minus infinity (PyTorch records a node whose backward
    raises: floor_divide has no derivative)."""
    return _rounded_div(FLOOR_DIVIDE, input, other, ("floor",))


def _div_mode_fwd(x: np.ndarray, y: np.ndarray, mode: str) -> np.ndarray:
    if x.dtype in _LOWP and y.dtype == np.float32 and y.ndim == 0:  # by a number (_rounded_div)
        return _div_mode_fwd(x.astype(np.float32), y, mode).astype(x.dtype)
    if mode == "floor":
        return np.floor_divide(x, y)
    if x.dtype.kind in "fc":
        return np.trunc(x / y).astype(np.result_type(x, y), copy=False)
    return (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(x.dtype)


# Rounded division is piecewise constant: PyTorch records DivBackward2 with zero gradients
# (a Python-scalar divisor is wrapped into a tensor, so its edge is (None, 0)). It saves the
# operands all the same (a wrapped Python scalar is not saved: saved tensor hooks never see it).
def _saved_operand(i: int, needed_by: int) -> Callable:
    def cond(ts: tuple, edges: tuple) -> bool:
        return (not getattr(ts[i], "_wrapped_number", False)
                and (needed_by < 0 or edges[needed_by][0] is not None))
    return cond


DIV_MODE = Op("div", "DivBackward2", _div_mode_fwd,
              lambda ctx, g: (_zeros_of(g) if ctx.needs_input_grad(0) else None,
                              _zeros_of(g) if ctx.needs_input_grad(1) else None),
              saves=("other", "self"), save_if=(_saved_operand(1, -1), _saved_operand(0, 1)),
              inputs=("self", "other"), args=("rounding_mode",), jvp=zero)


def _no_derivative(ctx, *grads):
    raise RuntimeError("derivative for aten::floor_divide is not implemented")


# ``x // y`` records a ``NotImplemented`` node whose backward raises, as PyTorch's does. Its
# edges are those of the operands that require grad only (FLOOR_DIVIDE_1 gets the arrays of
# both operands but the tensor of one).
FLOOR_DIVIDE = Op("floor_divide", "NotImplemented", _div_mode_fwd, _no_derivative,
                  inputs=("self", "other"), args=("rounding_mode",),
                  jvp=not_implemented("aten::floor_divide"))
FLOOR_DIVIDE_1 = Op("floor_divide", "NotImplemented", _div_mode_fwd, _no_derivative,
                    args=("rounding_mode",), jvp=not_implemented("aten::floor_divide"))


def reciprocal(input: Tensor) -> Tensor:
    """Elementwise ``1 / input``; integer inputs are promoted to float."""
    return apply(RECIPROCAL, (input,), (to_float(input._data),))


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001
    """``input ** exponent`` (tensor or scalar on either side)."""
    if not isinstance(input, Tensor):
        if not isinstance(exponent, Tensor):
            raise TypeError(f"pow() received an invalid combination of arguments - got "
                            f"({type(input).__name__}, {type(exponent).__name__}), but expected "
                            "a Tensor as input or exponent")
        e = exponent
        ed, s = scalar_operand(e._data, as_scalar(input))
        _not_implemented_for("pow", ed, "b")
        return apply(RPOW, (e,), (ed,), (s,))
    if isinstance(exponent, Tensor):
        ad, bd = promote_pair(input, exponent)
        _not_implemented_for("pow", ad, "b")
        try:
            return apply(POW, (input, exponent), (ad, bd))
        except ValueError:
            raise broadcast_error(ad.shape, bd.shape) from None
    if is_scalar(exponent):
        e = as_scalar(exponent)
        ad = promote_scalar(input._data, e)
        t = type(e)
        if t is not bool and (ad.dtype.kind not in "fc" or not (t is int or t is float)
                              or not -65504 <= e <= 65504):
            _dtype.scalar_to(e, _dtype._FROM_NP[ad.dtype])   # checked, the value is kept
        return apply(POW_S, (input,), (ad,), (e,))
    return pow(input, to_tensor(exponent))


# ---------------------------------------------------------------------------- unary
NEG = Op("neg", "NegBackward0", np.negative, lambda ctx, g: -g, jvp=lambda ctx, t: -t)
EXP = Op("exp", "ExpBackward0", np.exp, lambda ctx, g: g * _c(ctx.saved[0]),
         saves=("result",), jvp=elementwise(lambda ctx: ctx.result),
         raw=lambda ctx, g, s: _mul(g, s[0]))
LOG = Op("log", "LogBackward0", np.log, lambda ctx, g: g / _c(ctx.saved[0]),
         saves=("self",), jvp=lambda ctx, t: t / ctx.inputs[0],
         raw=lambda ctx, g, s: np.true_divide(g, s[0]))
SIN = Op("sin", "SinBackward0", np.sin, lambda ctx, g: g * _c(ctx.saved[0].cos()),
         saves=("self",), jvp=elementwise(lambda ctx: ctx.inputs[0].cos()),
         raw=lambda ctx, g, s: _mul_into(np.cos(s[0]), g))
COS = Op("cos", "CosBackward0", np.cos,
         lambda ctx, g: g * _c(-ctx.saved[0].sin()), saves=("self",),
         jvp=elementwise(lambda ctx: -ctx.inputs[0].sin()),
         raw=lambda ctx, g, s: _mul_into(_neg_into(np.sin(s[0])), g))
def _neg_into(t: Any) -> Any:
    return np.negative(t, out=t) if t.__class__ is _ndarray and t.size >= 16384 \
        else np.negative(t)


def _tanh_backward_vjp(ctx, gg):
    g, r = ctx.saved
    return (tanh_backward(gg, r) if ctx.needs_input_grad(0) else None,
            gg * _c(-2 * r * g) if ctx.needs_input_grad(1) else None)


def _sigmoid_backward_vjp(ctx, gg):
    g, r = ctx.saved
    return (sigmoid_backward(gg, r) if ctx.needs_input_grad(0) else None,
            gg * _c(g * (1 - 2 * r)) if ctx.needs_input_grad(1) else None)


def _tanh_backward_jvp(ctx, tg, tr):
    g, r = ctx.inputs
    out = tanh_backward(tg, r) if tg is not None else None
    if tr is not None:
        s = tr * (-2 * r * g)
        out = s if out is None else out + s
    return out


def _sigmoid_backward_jvp(ctx, tg, tr):
    g, r = ctx.inputs
    out = sigmoid_backward(tg, r) if tg is not None else None
    if tr is not None:
        s = tr * (g * (1 - 2 * r))
        out = s if out is None else out + s
    return out


# Note [Low-precision backward kernels]
# torch's float16/bfloat16 tanh/sigmoid kernels (forward and backward) compute in float32 and
# round the result once; NumPy on these dtypes rounds after every ufunc.
_LOWP = _dtype.HALF_NP


def _tanh_backward_fwd(g: np.ndarray, r: np.ndarray) -> np.ndarray:
    if r.dtype in _LOWP and g.dtype == r.dtype:     # Note [Low-precision backward kernels]
        r32 = r.astype(np.float32)
        return (g.astype(np.float32) * (1 - r32 * r32)).astype(r.dtype)
    if r.dtype.kind == "c":
        return g * np.conjugate(1 - r * r)
    t = r * r
    if t.__class__ is _ndarray and t.size >= _ONE_MIN_SIZE and t.shape == g.shape and \
            t.dtype == g.dtype:
        if not g.strides[-1] and _is_broadcast_one(g):
            # Note [Multiplying by a broadcast one]: ``1.0 * (1 - t)`` is ``1 - t``
            return np.subtract(_s(r, 1), t, out=t)
        if t.size < 16384:
            return g * (_s(r, 1) - t)
        # Note [Temporaries of tanh_backward]: the same three ufuncs, one array for all of
        # them. The Tensor rule of tanh (what a traced or create_graph backward runs) then
        # allocates one activation-sized array per layer, as the raw rule does; three made the
        # traced first call of a deep tanh MLP grow the heap past eager's peak (bench/jit.py's
        # memory row).
        np.subtract(_s(r, 1), t, out=t)
        return _mul(g, t, out=t)
    return g * (_s(r, 1) - t)


# Fused backward kernels (one op per backward step instead of three), each differentiable.
def _tanh_backward_raw(ctx, gg, saved):
    # Note [Raw backward rules] (ops/_dispatch.py): _tanh_backward_vjp on arrays
    g, r = saved
    n0, n1 = ctx.needs_input_grads()
    if not n1:
        return (_tanh_backward_fwd(gg, r) if n0 else None, None)
    u = _mul(r, _s(r, -2))
    if g.size >= _ONE_MIN_SIZE and _is_broadcast_one(g) and u.shape == gg.shape:
        # Note [Multiplying by a broadcast one]: ``u * g`` is ``u``; the product with ``gg``
        # goes into the temporary ``u``
        u = _mul(gg, u, out=u)
    else:
        u = _mul(gg, _mul(u, g))
    return (_tanh_backward_fwd(gg, r) if n0 else None, u)


TANH_BACKWARD = Op("tanh_backward", "TanhBackwardBackward0", _tanh_backward_fwd,
                   _tanh_backward_vjp,
                   saves=("grad_output", "output"), inputs=("grad_output", "output"),
                   jvp=_tanh_backward_jvp, raw=_tanh_backward_raw)
def _sigmoid_backward_fwd(g: np.ndarray, r: np.ndarray) -> np.ndarray:
    # Note [Low-precision backward kernels] (torch's float16 kernel rounds otherwise)
    if r.dtype == _dtype.bfloat16.np and g.dtype == r.dtype:
        r32 = r.astype(np.float32)
        return (g.astype(np.float32) * (r32 * (1 - r32))).astype(r.dtype)
    return g * np.conjugate(r * (1 - r))


SIGMOID_BACKWARD = Op("sigmoid_backward", "SigmoidBackwardBackward0",
                      _sigmoid_backward_fwd, _sigmoid_backward_vjp,
                      saves=("grad_output", "output"), inputs=("grad_output", "output"),
                      jvp=_sigmoid_backward_jvp)


def tanh_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    """``grad_output * (1 - output**2)``: the gradient of tanh given its output."""
    g, r = grad_output._data, output._data
    if g.dtype is not r.dtype:
        g, r = promote_pair(grad_output, output)
    return apply(TANH_BACKWARD, (grad_output, output), (g, r))


def sigmoid_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    """``grad_output * output * (1 - output)``: the gradient of sigmoid given its output."""
    return apply(SIGMOID_BACKWARD, (grad_output, output), promote_pair(grad_output, output))


# Note [Reusing tanh's 1 - y*y]
# A gradient penalty differentiates ``sum(tanh(h))`` with create_graph: tanh's node runs its
# Tensor rule with a broadcast one, ``tanh_backward(1, y)``, whose forward computes ``1 - y*y``
# and nothing else (Note [Multiplying by a broadcast one]). The backward through that graph then
# runs the same node again, raw, as ``g * (1 - y*y)``: the same two passes over ``y`` again,
# the same ufuncs on the same array, so the same bits. The Tensor rule leaves the array it made
# on the node (``_one_minus_sq``: a private copy of the array, as the array itself is the
# gradient the create_graph backward hands on and may reach the user; its Tensor's version
# counter and version; no Tensor, so no reference cycle through the node) and the node's next
# raw run multiplies by it
# instead, once, if nothing changed it in place since (a version bump of the Tensor or a view
# of it); then the node lets it go. Any other case (another dtype, shape or layout, a Tensor
# rule run, saved tensor hooks) computes ``1 - y*y`` as before.
def _tanh_vjp(ctx, g):
    r = ctx.saved[0]
    res = tanh_backward(g, r)
    gd, rd, d = g._data, r._data, res._data
    # ``g`` one 1.0 broadcast: ``res`` is ``1 - y*y`` whichever branch the forward took
    # (``1.0 * x`` is ``x``); the test of _is_broadcast_one, without its size threshold
    if (d.__class__ is _ndarray and gd.dtype is rd.dtype and d.dtype is rd.dtype
            and rd.dtype in _RAW_REAL and d.shape == rd.shape and gd.shape == rd.shape
            and res.__class__ is Tensor and gd.size and not any(gd.strides)
            and gd.item(0) == 1.0):
        vc = res._version_counter
        if vc is None:
            vc = res._version_counter = [0]
        # a private copy: ``res`` is the gradient itself (seed skipped), which may reach the
        # user (autograd.grad's output, a hook), who can write into it without a version bump
        # (``.numpy()``, ``.data``); one copy still saves a pass against recomputing
        ctx._one_minus_sq = (d.copy(), vc, vc[0])
    return res


_RAW_REAL = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _tanh_cached(ctx, r):
    # Note [Reusing tanh's 1 - y*y]: the node's ``1 - y*y`` if still valid, once
    c = ctx._one_minus_sq
    ctx._one_minus_sq = None
    t, vc, v = c
    if vc[0] == v and t.dtype is r.dtype and t.shape == r.shape:
        return t
    return None


def _tanh_raw(ctx, g, saved):
    r = saved[0]
    if ctx._one_minus_sq is not None:
        t = _tanh_cached(ctx, r)
        if t is not None:
            return _mul(g, t)
    return _tanh_backward_fwd(g, r)


def _tanh_raw_into(ctx, g, saved):
    # _tanh_backward_fwd's real branch, the product written into ``g`` (Note [Raw backward
    # rules]) and the temporary reused
    r = saved[0]
    if not r.ndim:
        return _tanh_backward_fwd(g, r)      # 0-d: NumPy gives scalars, no ``out=``
    if ctx._one_minus_sq is not None:
        t = _tanh_cached(ctx, r)
        if t is not None:
            return _mul(g, t, out=g)
    t = _mul(r, r)
    np.subtract(_s(r, 1), t, out=t)
    return _mul(g, t, out=g)


TANH = Op("tanh", "TanhBackward0", np.tanh, _tanh_vjp, saves=("result",),
          jvp=lambda ctx, t: tanh_backward(t, ctx.result),
          raw=_tanh_raw, raw_into=_tanh_raw_into)
TANH.node_cls._one_minus_sq = None
SQRT = Op("sqrt", "SqrtBackward0", np.sqrt,
          lambda ctx, g: g / _c(2 * ctx.saved[0]), saves=("result",),
          jvp=lambda ctx, t: t / (2 * ctx.result),
          raw=lambda ctx, g, s: np.true_divide(g, _mul(2, s[0])))


def _sigmoid_fwd(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    if x.dtype in _LOWP:        # Note [Low-precision backward kernels]
        return _sigmoid_fwd(x.astype(np.float32)).astype(x.dtype)
    # exp(-log(1 + exp(-x))) is stable for large |x|.
    return np.exp(-np.logaddexp(0, -x)).astype(x.dtype, copy=False)


def _sigmoid_vjp(ctx, g):
    return sigmoid_backward(g, ctx.saved[0])


SIGMOID = Op("sigmoid", "SigmoidBackward0", _sigmoid_fwd, _sigmoid_vjp,
             saves=("result",), jvp=lambda ctx, t: sigmoid_backward(t, ctx.result),
             raw=lambda ctx, g, s: SIGMOID_BACKWARD.forward(g, s[0]))
def _threshold_backward_vjp(ctx, gg):
    (r,) = ctx.saved
    return (threshold_backward(gg, r) if ctx.needs_input_grad(0) else None,
            _zeros_of(r) if ctx.needs_input_grad(1) else None)


# relu's backward is an op of (grad, result), so double backward reaches the input (zeros).
def _threshold_backward_fwd(g: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``g`` where ``r <= 0`` is false, else 0: PyTorch's mask, so a NaN result passes the
    gradient through. A product with the mask is ~10x faster than ``np.where`` here; where it
    made a NaN (a NaN or inf gradient under the mask) the exact select runs. Real floats take
    the bits of ``g`` and-ed with the mask's sign extension (0 or all ones): exact (a kept NaN
    stays, a dropped one is +0), one pass less than the product's check."""
    dt = g.dtype
    if dt.kind == "f" and dt.itemsize in (2, 4, 8) and dt.isnative:
        # the int8 mask ``(r <= 0) - 1`` (0 or all ones) made in place: one byte per element
        # lives beside the result (two did: a traced first call's peak, Note [First-call cost])
        m = np.less_equal(r, 0)
        mi = m.view(np.int8) if type(m) is np.ndarray else np.int8(m)
        mi = np.subtract(mi, 1, out=mi) if type(mi) is np.ndarray else mi - np.int8(1)
        gi = g.view(f"i{dt.itemsize}")
        if g.nbytes >= _ALIGN_MIN and g.flags.c_contiguous and g.shape == mi.shape:
            # the gradient feeds products: Note [Aligned arrays]
            out = _aligned.empty(g.shape, dt)
            np.bitwise_and(gi, mi, out=out.view(gi.dtype))
            return out
        return np.bitwise_and(gi, mi).view(dt)
    m = _relu_keep(r)
    out = g * m
    # A NaN makes the sum NaN: one reduction, no temporary (np.isnan(out).any() is two passes
    # and a bool array). A false alarm (inf + -inf) only takes the exact path.
    if out.dtype.kind in "fc" and np.isnan(np.add.reduce(out, axis=None)):
        out = np.where(m, g, np.zeros((), g.dtype))
    return out


def _relu_keep(r: np.ndarray) -> Any:
    """relu's backward mask: True where the gradient passes, ``not r <= 0`` (PyTorch's
    ``threshold_backward``: NaN passes, -0.0 does not); a new bool array (a NumPy bool for 0-d)."""
    m = np.less_equal(r, 0)
    return np.logical_not(m, out=m) if type(m) is np.ndarray else np.logical_not(m)


THRESHOLD_BACKWARD = Op("threshold_backward", "ThresholdBackwardBackward0",
                        _threshold_backward_fwd,
                        _threshold_backward_vjp, saves=("self",), inputs=("grad_output", "self"),
                        jvp=lambda ctx, tg, tr: threshold_backward(tg, ctx.inputs[1])
                        if tg is not None else _zeros_of(ctx.result))


def threshold_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    """``grad_output`` where ``output > 0``, else 0: the gradient of relu given its output."""
    return apply(THRESHOLD_BACKWARD, (grad_output, output), promote_pair(grad_output, output))


def _relu_raw_into(ctx, g, saved):
    # _threshold_backward_fwd's float branch written into ``g`` (Note [Raw backward rules]:
    # ``g`` is the engine's alone)
    r = saved[0]
    if not r.ndim:
        return _threshold_backward_fwd(g, r)  # 0-d: NumPy gives scalars, no ``out=``
    return relu_backward_bits(g, r)


def relu_backward_bits(g: np.ndarray, r: np.ndarray) -> np.ndarray:
    """relu's backward written into ``g`` (float32 or float64, ``r`` of its dtype, at least 1-d):
    ``g``'s bits and-ed with 0 where ``r <= 0``, else with all ones (the int8 mask ``(r <= 0) -
    1``, sign-extended by the ufunc); the bits of ``_threshold_backward_fwd``. Returns ``g``."""
    m = np.less_equal(r, 0).view(np.int8)
    gi = g.view(_INT_OF[g.dtype])  # type: ignore[call-overload]
    np.bitwise_and(gi, np.subtract(m, 1, out=m), out=gi)
    return g


_INT_OF = {np.dtype(np.float32): np.dtype(np.int32), np.dtype(np.float64): np.dtype(np.int64)}


def _relu_kw() -> dict:
    return dict(saves=("result",), jvp=lambda ctx, t: threshold_backward(t, ctx.result),
                raw=lambda ctx, g, s: _threshold_backward_fwd(g, s[0]), raw_into=_relu_raw_into)


def _relu_vjp(ctx, g):
    return threshold_backward(g, ctx.saved[0])


def _zero_like(x: np.ndarray) -> Any:
    """relu's other operand: zeros of ``x``'s shape, dtype and layout for a C- or F-contiguous
    ``x`` (Note [Zero operands] in _workspace.py: two arrays of one layout take NumPy's fast
    loop, and the result keeps ``x``'s layout), else 0."""
    if not x.ndim:
        return 0
    if x.flags.c_contiguous:
        return zeros_operand(x.shape, x.dtype)
    if x.flags.f_contiguous:
        return zeros_operand(x.shape[::-1], x.dtype).T
    return 0


_RELU_SECOND = _ties.RELU_SECOND


def _relu_fwd(x: np.ndarray) -> np.ndarray:
    if x.nbytes >= _ALIGN_MIN and x.dtype in _RELU_INTO_DTYPES and x.flags.c_contiguous:
        # its result feeds the next layer's product: Note [Aligned arrays]
        z = zeros_operand(x.shape, x.dtype)
        o = _aligned.empty(x.shape, x.dtype)
        return np.maximum(z, x, out=o) if _RELU_SECOND.get(x.dtype) else \
            _ties.relu(x, z, out=o)
    # relu(-0.0) is -0.0: the operands in the order that keeps x on ties (Note [Signed zeros
    # in max and min]), inlined for the usual dtypes (a call costs ~5% of a small relu)
    z = _zero_like(x)
    if _RELU_SECOND.get(x.dtype):
        return np.maximum(z, x)
    return _ties.relu(x, z).astype(x.dtype, copy=False)


RELU = Op("relu", "ReluBackward0", _relu_fwd, _relu_vjp, **_relu_kw())
# Note [relu in place on a temporary]
# ``relu(x @ W)``: the product's array is a temporary no one else can reach, and relu's forward
# writes into it (``np.maximum(a, zeros, out=a)``, the same call and bits) instead of filling a
# new array (mlp_large: two of 4 MB per step; the product's array dies with its Tensor anyway).
# RELU_INTO records the same node (name, saved result, rules); it is a separate Op so the op
# table, the tracer, vmap and forward AD, which never see it, keep RELU. ``relu`` uses it only
# when nothing else can see the input: the public wrapper (``ndgrad.relu``/``Tensor.relu``)
# called it directly; the Tensor is referenced only by that call chain (the count of a
# temporary passed through a wrapper, measured at import on a look-alike pair of functions:
# Note [Sole-reference tests] in ndgrad/_refcounts.py); its array only by the Tensor, owning
# its memory (no base) and writeable; the Tensor is a plain Tensor, no view, and no leaf that
# requires grad (its AccumulateGrad node may keep it); no instrumentation is on (tracing,
# batching, forward AD, profiling, a transform). A caller holding the product, a hook's
# closure, a list, a view, a saved tensor or ``.data`` all add a reference, and then relu
# makes a new array as before. Internal callers of the unchecked ``relu`` are never the
# wrapper, so a composite holding its operand in a local is safe. ``F.relu`` (another call
# chain) makes a new array.
RELU_INTO = Op("relu", "ReluBackward0", lambda x: _ties.relu(x, _zero_like(x), out=x),
               _relu_vjp, **_relu_kw())
_dispatch.REGISTRY["relu"].remove(RELU_INTO)      # not an op of the table: RELU's variant


def _through_wrapper(t: object) -> int:
    return _refs_here(t)


def _refs_here(t: object) -> int:
    return sys.getrefcount(t)


# the count ``relu`` sees for a temporary passed through the public wrapper, or -1: never
_TEMP_REFS = _through_wrapper(object()) if SOLE_REFERENCE_TESTS else -1
_ARRAY_REFS = 3 if SOLE_REFERENCE_TESTS else -1   # the Tensor's _data, a local, the argument
_RELU_INTO_MIN = 1 << 16                          # elements; below, out= saves nothing
_RELU_INTO_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
_wrapper_codes: set = set()


def _is_public_wrapper(code: Any) -> bool:
    if code in _wrapper_codes:
        return True
    # the signature wrappers of ndgrad.relu and Tensor.relu (_signature.py ``wrap``)
    if code.co_name == "relu" and code.co_filename.endswith("<signature relu>"):
        _wrapper_codes.add(code)
        return True
    return False


def _abs_vjp(ctx, g):
    (x,) = ctx.saved
    return g * x.sgn()


def _abs_jvp(ctx, t):
    x = ctx.inputs[0]
    if x._data.dtype.kind == "c":     # |z| moves by Re(conj(sgn z) t)
        return (t * x.sgn().conj()).real_part()
    return t * x.sgn()


ABS = Op("abs", "AbsBackward0", np.abs, _abs_vjp, saves=("self",), jvp=_abs_jvp)


def _sgn_fwd(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag)).astype(x.dtype)
    return _sign_fwd(x)


def _sign_fwd(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        return x.copy()          # NumPy has no bool sign loop
    r = np.sign(x)
    if r.dtype.kind not in "iu":     # torch's sign is (0 < x) - (x < 0): NaN -> 0, -0.0 -> +0.0
        nan = r != r
        if nan.any():
            r[nan] = 0
        if r.dtype.kind == "V":      # ml_dtypes' sign keeps -0.0
            r += 0
    return r


SIGN = Op("sign", "SignBackward0", _sign_fwd, lambda ctx, g: _zeros_of(g), jvp=zero)
def _sgn_complex_step(z: Tensor, sg: Tensor, v: Tensor) -> Tensor:
    """``(v - sgn * Re(conj(sgn) v)) / |z|`` (0 where z == 0): sgn's derivative for complex z
    (with v the gradient this is the VJP, with v the tangent the JVP)."""
    mag = z.abs()
    zero_ = mag == 0
    proj = (sg.conj() * v).real_part()
    return ((v - sg * proj) / mag.masked_fill(zero_, 1)).masked_fill(zero_, 0)


def _sgn_vjp(ctx, g):
    if ctx.saved[0] is None:             # real input: piecewise constant
        return _zeros_of(g)
    z, sg = ctx.saved
    return _sgn_complex_step(z, sg, g)


def _sgn_jvp(ctx, t):
    z = ctx.inputs[0]
    if z._data.dtype.kind != "c":
        return zero(ctx, t)
    return _sgn_complex_step(z, ctx.result, t)


def _is_complex_input(tensors, edges) -> bool:
    return tensors[0]._data.dtype.kind == "c"


SGN = Op("sgn", "SgnBackward0", _sgn_fwd, _sgn_vjp, saves=("self", "result"),
         save_if=(_is_complex_input, _is_complex_input), jvp=_sgn_jvp)
CONJ = Op("conj", "ConjBackward0", np.conjugate, lambda ctx, g: g.conj(), jvp=linear)


def neg(input: Tensor) -> Tensor:
    """Elementwise negation, ``-input`` (not defined for bool tensors)."""
    if input._data.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    return apply(NEG, (input,), (input._data,))


def exp(input: Tensor) -> Tensor:
    """Elementwise exponential; integer inputs are promoted to float."""
    x = input._data
    return apply(EXP, (input,), (x if x.dtype in _FLOATING else to_float(x),))


def log(input: Tensor) -> Tensor:
    """Elementwise natural logarithm; integer inputs are promoted to float."""
    x = input._data
    return apply(LOG, (input,), (x if x.dtype in _FLOATING else to_float(x),))


def sin(input: Tensor) -> Tensor:
    """Elementwise sine (radians); integer inputs are promoted to float."""
    x = input._data
    return apply(SIN, (input,), (x if x.dtype in _FLOATING else to_float(x),))


def cos(input: Tensor) -> Tensor:
    """Elementwise cosine (radians); integer inputs are promoted to float."""
    x = input._data
    return apply(COS, (input,), (x if x.dtype in _FLOATING else to_float(x),))


def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent; integer inputs are promoted to float."""
    x = input._data
    return apply(TANH, (input,), (x if x.dtype in _FLOATING else to_float(x),))


def sigmoid(input: Tensor) -> Tensor:
    """Elementwise logistic function ``1 / (1 + exp(-input))``."""
    x = input._data
    return apply(SIGMOID, (input,), (x if x.dtype in _FLOATING else to_float(x),))


def sqrt(input: Tensor) -> Tensor:
    """Elementwise square root; integer inputs are promoted to float."""
    x = input._data
    return apply(SQRT, (input,), (x if x.dtype in _FLOATING else to_float(x),))


def relu(input: Tensor) -> Tensor:
    """Elementwise ``max(input, 0)``."""
    k = input._data.dtype.kind
    if k == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if k == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    d = input._data
    if (d.size >= _RELU_INTO_MIN and sys.getrefcount(input) <= _TEMP_REFS
            and sys.getrefcount(d) <= _ARRAY_REFS and d.dtype in _RELU_INTO_DTYPES
            and (d.base is None or owns_memory(d)) and d.flags.writeable
            and input.__class__ is Tensor
            and input._base is None and not input._blevel
            and (input._grad_fn is not None or not input._requires_grad)
            and not (_dispatch._TRACING or _dispatch._BATCHING or _dispatch._FW_AD
                     or _dispatch._PROFILING or _dispatch._TRANSFORM)
            and _is_public_wrapper(sys._getframe(1).f_code)):
        return apply(RELU_INTO, (input,), (d,))    # Note [relu in place on a temporary]
    return apply(RELU, (input,), (d,))


def abs(input: Tensor) -> Tensor:  # noqa: A001
    """Elementwise absolute value (the modulus for complex inputs)."""
    _not_implemented_for("abs_cpu", input._data, "b")
    return apply(ABS, (input,), (input._data,))


def sign(input: Tensor) -> Tensor:
    """Elementwise sign: -1, 0 or 1, in the dtype of ``input``.

    >>> import ndgrad
    >>> ndgrad.tensor([-2.0, 0.0, 3.0]).sign().tolist()
    [-1.0, 0.0, 1.0]
    """
    if input._data.dtype.kind == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead.")
    return apply(SIGN, (input,), (input._data,))


def sgn(input: Tensor) -> Tensor:
    """Sign that also handles complex inputs: ``z / |z|``, or 0 where ``z`` is 0."""
    return apply(SGN, (input,), (input._data,))


def conj(input: Tensor) -> Tensor:
    """Complex conjugate; returns ``input`` itself for real tensors."""
    if input._data.dtype.kind != "c":
        return input
    return apply(CONJ, (input,), (input._data,))


# ---------------------------------------------------------------------------- where / clamp
def _where_fwd(a, b, cond):
    return np.where(cond._data, a, b)


# Inputs are (self, other); the condition is a tensor argument, saved (Note [Tensor arguments]).


def _where_vjp(ctx, g):
    (cond,) = ctx.saved
    zero = _wrap(np.zeros((), dtype=g._data.dtype))
    return (where(cond, g, zero) if ctx.needs_input_grad(0) else None,
            where(cond, zero, g) if ctx.needs_input_grad(1) else None)


WHERE = Op("where", "WhereBackward0", _where_fwd, _where_vjp, inputs=("self", "other"),
           args=("condition",), saves=("condition",), jvp=linear)


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (either may be a
    scalar). With only ``condition``, the indices of its nonzero elements."""
    if _bmarked((condition, input, other)):  # Note [Batched backward]
        r = _bcall(where, condition, input, other)
        if r is not NotImplemented:
            return r
    if input is None and other is None:
        return tuple(_wrap(i) for i in np.nonzero(to_tensor(condition)._data))
    cond_t = to_tensor(condition)
    cond = cond_t._data
    if cond.dtype != np.bool_:
        if cond.dtype == np.uint8:
            warn_user_once("where received a uint8 condition tensor. This behavior is deprecated "
                           "and will be removed in a future version of PyTorch. Use a boolean "
                           "condition instead.")
            cond = cond != 0
        elif cond.dtype.kind != "b":
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {_dtype._FROM_NP[cond.dtype]._torch_name}")
    a = input if isinstance(input, Tensor) else None
    b = other if isinstance(other, Tensor) else None
    if a is None and b is None:
        ta, tb = to_tensor(input), to_tensor(other)
        rt = _dtype.result_type(as_scalar(input), as_scalar(other)) if not isinstance(
            input, (list, np.ndarray)) else _dtype.result_type(ta, tb)
        return _wrap(np.where(cond, ta._data, tb._data).astype(rt.np))
    rt = _dtype.result_type(*(x if isinstance(x, Tensor) else as_scalar(x)
                              for x in (input, other)))
    ta = a if a is not None else _wrap(np.asarray(_where_scalar(input, rt), dtype=rt.np))
    tb = b if b is not None else _wrap(np.asarray(_where_scalar(other, rt), dtype=rt.np))
    ad = ta._data if ta._data.dtype == rt.np else ta._data.astype(rt.np)
    bd = tb._data if tb._data.dtype == rt.np else tb._data.astype(rt.np)
    _check_broadcast(cond.shape, ad.shape, bd.shape)
    return apply(WHERE, (ta, tb), (ad, bd), (cond_t,))


def _where_scalar(v: Any, rt: _dtype.dtype) -> Any:
    # A number is converted to the result dtype with PyTorch's check; lists are data.
    return _dtype.scalar_to(as_scalar(v), rt, relaxed=True) if is_scalar(v) else v


# The C++ element type names PyTorch prints in some messages.
_C_TYPE_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                 "uint8": "unsigned char", "float32": "float", "float64": "double",
                 "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                 "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
# The mask is a tensor argument, saved (Note [Tensor arguments]).
MASKED_FILL_S: Op = Op("masked_fill", "MaskedFillBackward0",
                   lambda x, mask, value: np.where(mask._data, np.asarray(value, x.dtype), x),
                   lambda ctx, g: where(ctx.saved[0], 0, g), args=("mask", "value"),
                   saves=("mask",),
                   jvp=lambda ctx, t: apply(MASKED_FILL_S, (t,), (t._data,), (ctx._args[0], 0)))


def _masked_fill_t_vjp(ctx, g):
    (mask,) = ctx.saved
    return (where(mask, 0, g) if ctx.needs_input_grad(0) else None,
            where(mask, g, 0).sum() if ctx.needs_input_grad(1) else None)


MASKED_FILL_T = Op("masked_fill", "MaskedFillBackward1",
                   lambda x, v, mask: np.where(mask._data, v, x), _masked_fill_t_vjp,
                   inputs=("self", "value"), args=("mask",), saves=("mask",), jvp=linear)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` where ``mask`` (a bool tensor broadcastable to ``input``), else ``input``."""
    if _bmarked((input, mask, value)):  # Note [Batched backward]
        r = _bcall(masked_fill, input, mask, value)
        if r is not NotImplemented:
            return r
    if not isinstance(mask, Tensor):
        raise TypeError(f"masked_fill(): argument 'mask' (position 1) must be Tensor, not "
                        f"{type(mask).__name__}")
    m, x = mask._data, input._data
    _check_broadcast(m.shape, x.shape)      # PyTorch expands before it looks at the dtype
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_C_TYPE_NAMES.get(m.dtype.name, m.dtype.name)}")
    dt = _dtype._FROM_NP[x.dtype]
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        _dtype.scalar_to(value._data.item(), dt)     # PyTorch reads the value as a number
        v = value._data if value._data.dtype == x.dtype else value._data.astype(x.dtype)
        return apply(MASKED_FILL_T, (input, value), (x, v), (mask,))
    return apply(MASKED_FILL_S, (input,), (x,), (mask, _dtype.scalar_to(as_scalar(value), dt)))


def _clamp_s_mask(x, lo, hi):
    """Where ``x`` is inside the bounds (where clamp passes its derivative through)."""
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        m2 = x <= hi
        mask = m2 if mask is None else mask & m2
    return mask


def _clamp_s_vjp(ctx, g):
    (x,) = ctx.saved
    return where(_clamp_s_mask(x, *ctx._args), g, 0)


def _clamp_fwd(x, lo, hi):
    out = x
    if lo is not None:
        out = _ties.maximum(out, lo)        # Note [Signed zeros in max and min]
    if hi is not None:
        out = _ties.minimum(out, hi)
    return out.astype(x.dtype, copy=False) if out is not x else x.copy()


CLAMP_S = Op("clamp", "ClampBackward1", _clamp_fwd, _clamp_s_vjp, saves=("self",),
             args=("min", "max"),
             jvp=lambda ctx, t: where(_clamp_s_mask(ctx.inputs[0], *ctx._args), t, 0))


def _clamp_t_vjp(ctx, g):
    hi, lo, x = ctx.saved
    # A missing bound was not saved (as PyTorch's): the infinite stand-in again.
    lo = lo if lo is not None else _unbounded(ctx.input_dtype(1), True)
    hi = hi if hi is not None else _unbounded(ctx.input_dtype(2), False)
    zero = g * 0
    # Where min > max the result is max: the gradient goes to max alone.
    return (where((x >= lo) & (x <= hi), g, zero) if ctx.needs_input_grad(0) else None,
            where((x < lo) & (lo < hi), g, zero) if ctx.needs_input_grad(1) else None,
            where((x > hi) | (hi < lo), g, zero) if ctx.needs_input_grad(2) else None)


def _clamp_t_jvp(ctx, tx, tlo, thi):
    x, lo, hi = ctx.inputs
    parts = []
    if tx is not None:
        parts.append(where((x >= lo) & (x <= hi), tx, 0))
    if tlo is not None:
        parts.append(where((x < lo) & (lo < hi), tlo, 0))
    if thi is not None:
        parts.append(where((x > hi) | (hi < lo), thi, 0))
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def _unbounded(rt: np.dtype, low: bool) -> Tensor:
    if rt.kind in "iub":
        info = np.iinfo(rt) if rt.kind != "b" else None
        v: Any = (info.min if low else info.max) if info else (False if low else True)
    else:
        v = -np.inf if low else np.inf
    t = _wrap(np.asarray(v, dtype=rt))
    t._unbounded = True
    return t


def _is_bound(t: Tensor) -> bool:
    return not getattr(t, "_unbounded", False)


# A missing bound is an infinite tensor, so one op covers min-only, max-only and both; it is not
# saved (``grad_fn._saved_max`` is None, pack hooks see only the given tensors, as PyTorch's).
CLAMP_T = Op("clamp", "ClampBackward0", lambda x, lo, hi: _like(x, np.clip(x, lo, hi)),
             _clamp_t_vjp, saves=("max", "min", "self"),
             save_if=(lambda ts, _: _is_bound(ts[2]), lambda ts, _: _is_bound(ts[1]), None),
             inputs=("self", "min", "max"), jvp=_clamp_t_jvp)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Clamp into ``[min, max]``; bounds are scalars or tensors."""
    if _bmarked((input, min, max)):  # Note [Batched backward]
        r = _bcall(clamp, input, min, max)
        if r is not NotImplemented:
            return r
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    # PyTorch's two overloads take two Tensor bounds or two Number bounds (a 0-d Tensor may
    # stand for a Number), not one of each.
    if min is not None and max is not None and \
            isinstance(min, Tensor) != isinstance(max, Tensor):
        t = min if isinstance(min, Tensor) else max
        if t._data.ndim > 0:
            raise TypeError("clamp() received an invalid combination of arguments - got "
                            f"(Tensor, {type(min).__name__}, {type(max).__name__}), but "
                            "expected (Tensor min, Tensor max) or (Number min, Number max)")
    _check_clamp_real(input, min, max)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = min if min is None or isinstance(min, Tensor) else to_tensor(min)
        hi = max if max is None or isinstance(max, Tensor) else to_tensor(max)
        rt = _dtype.result_type(*[t for t in (input, lo, hi) if t is not None]).np
        lo = lo if lo is not None else _unbounded(rt, True)
        hi = hi if hi is not None else _unbounded(rt, False)
        arrays = tuple(t._data if t._data.dtype == rt else t._data.astype(rt)
                       for t in (input, lo, hi))
        _check_broadcast(*(a.shape for a in arrays))
        return apply(CLAMP_T, (input, lo, hi), arrays)
    lo = as_scalar(min) if min is not None else None
    hi = as_scalar(max) if max is not None else None
    x = input._data
    for bound in (lo, hi):
        if bound is not None:
            x = promote_scalar(x, bound)
    lo, hi = _clamp_scalar(lo, x.dtype), _clamp_scalar(hi, x.dtype)
    return apply(CLAMP_S, (input,), (x,), (lo, hi))


def _clamp_scalar(bound: Any, dt: np.dtype) -> Any:
    """A scalar bound converted to the result dtype (checked); NaN bounds stay NaN."""
    if bound is None or ((type(bound) is float or type(bound) is int) and dt.kind in "fc"
                         and -65504 <= bound <= 65504):
        # float16/bfloat16: the number through float32 (Note [Double to half])
        return _dtype.number_in(bound, dt) if dt is _F16 or dt is _BF16 else bound
    return _dtype.scalar_to(bound, _dtype._FROM_NP[dt])


def _clamp_bound_vjp(is_min: bool):
    def vjp(ctx, g):
        bound, x = ctx.saved
        zero = g * 0
        keep = x >= bound if is_min else x <= bound
        return (where(keep, g, zero) if ctx.needs_input_grad(0) else None,
                where(keep, zero, g) if ctx.needs_input_grad(1) else None)
    return vjp


def _clamp_bound_s_vjp(is_min: bool):
    def vjp(ctx, g):
        (x,) = ctx.saved
        return where(x >= ctx._args[0] if is_min else x <= ctx._args[0], g, 0)
    return vjp


def _clamp_bound_s_jvp(is_min: bool):
    def jvp(ctx, t):
        x, b = ctx.inputs[0], ctx._args[0]
        return where(x >= b if is_min else x <= b, t, 0)
    return jvp


def _clamp_bound_jvp(is_min: bool):
    def jvp(ctx, tx, tb):
        x, b = ctx.inputs
        keep = x >= b if is_min else x <= b
        out = where(keep, tx, 0) if tx is not None else None
        if tb is not None:
            r = where(keep, 0, tb)
            out = r if out is None else out + r
        return out
    return jvp


CLAMP_MIN_S = Op("clamp_min", "ClampMinBackward0", lambda x, b: _clamp_fwd(x, b, None),
                 _clamp_bound_s_vjp(True), saves=("self",), args=("min",),
                 jvp=_clamp_bound_s_jvp(True))
CLAMP_MAX_S = Op("clamp_max", "ClampMaxBackward0", lambda x, b: _clamp_fwd(x, None, b),
                 _clamp_bound_s_vjp(False), saves=("self",), args=("max",),
                 jvp=_clamp_bound_s_jvp(False))
CLAMP_MIN_T = Op("clamp_min", "ClampMinBackward1", lambda x, b: _like(x, np.maximum(x, b)),
                 _clamp_bound_vjp(True),
                 saves=("min", "self"), inputs=("self", "min"), jvp=_clamp_bound_jvp(True))
CLAMP_MAX_T = Op("clamp_max", "ClampMaxBackward1", lambda x, b: _like(x, np.minimum(x, b)),
                 _clamp_bound_vjp(False),
                 saves=("max", "self"), inputs=("self", "max"), jvp=_clamp_bound_jvp(False))


_check_broadcast = check_broadcast


def _check_clamp_real(input: Tensor, *bounds: Any) -> None:
    for x in (input, *bounds):
        if isinstance(x, Tensor) and x._data.dtype.kind == "c":
            raise NotImplementedError("clamp is not supported for complex types")
    for x in bounds:
        if isinstance(x, complex):      # a complex number bound of a real tensor
            if input._data.dtype.kind != "f":
                raise NotImplementedError("clamp is not supported for complex types")
            raise RuntimeError("value cannot be converted to type double without overflow")


def _clamp_bound(input: Tensor, bound: Any, is_min: bool) -> Tensor:
    _check_clamp_real(input, bound)
    if isinstance(bound, Tensor):
        op = CLAMP_MIN_T if is_min else CLAMP_MAX_T
        ad, bd = promote_pair(input, bound)
        try:
            return apply(op, (input, bound), (ad, bd))
        except ValueError:
            raise broadcast_error(ad.shape, bd.shape) from None
    b = as_scalar(bound)
    x = promote_scalar(input._data, b)
    return apply(CLAMP_MIN_S if is_min else CLAMP_MAX_S, (input,), (x,),
                 (_clamp_scalar(b, x.dtype),))


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    """``max(input, min)`` elementwise (``min`` a scalar or a tensor)."""
    return _clamp_bound(input, min, True)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    """``min(input, max)`` elementwise (``max`` a scalar or a tensor)."""
    return _clamp_bound(input, max, False)


def _minmax_vjp(is_max: bool):
    def vjp(ctx, g):
        b, a = ctx.saved
        half = g / 2
        z = g * 0
        win_a = a > b if is_max else a < b
        win_b = b > a if is_max else b < a
        tie = a == b
        ga = where(win_a, g, where(tie, half, z)) if ctx.needs_input_grad(0) else None
        gb = where(win_b, g, where(tie, half, z)) if ctx.needs_input_grad(1) else None
        return ga, gb
    return vjp


def _minmax_jvp(is_max: bool):
    # The winner's tangent; ties take the mean of both (as the VJP splits the gradient).
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        tie = a == b
        out = None
        for t, win in ((ta, a > b if is_max else a < b), (tb, b > a if is_max else b < a)):
            if t is not None:
                r = where(win, t, where(tie, t / 2, 0))
                out = r if out is None else out + r
        return out
    return jvp


MAXIMUM = Op("maximum", "MaximumBackward0", np.maximum, _minmax_vjp(True),
             saves=("other", "self"), inputs=("self", "other"), jvp=_minmax_jvp(True))
MINIMUM = Op("minimum", "MinimumBackward0", np.minimum, _minmax_vjp(False),
             saves=("other", "self"), inputs=("self", "other"), jvp=_minmax_jvp(False))


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum; ties split the gradient evenly."""
    if _bmarked((input, other)):  # Note [Batched backward]
        r = _bcall(maximum, input, other)
        if r is not NotImplemented:
            return r
    if not isinstance(other, Tensor):
        raise TypeError(f"maximum(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    if input._data.dtype.kind == "c" or other._data.dtype.kind == "c":
        raise RuntimeError("maximum not implemented for complex tensors.")
    ad, bd = promote_pair(input, other)
    _check_broadcast(ad.shape, bd.shape)
    return apply(MAXIMUM, (input, other), (ad, bd))


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum; ties split the gradient evenly."""
    if _bmarked((input, other)):  # Note [Batched backward]
        r = _bcall(minimum, input, other)
        if r is not NotImplemented:
            return r
    if not isinstance(other, Tensor):
        raise TypeError(f"minimum(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    if input._data.dtype.kind == "c" or other._data.dtype.kind == "c":
        raise RuntimeError("minimum not implemented for complex tensors.")
    ad, bd = promote_pair(input, other)
    _check_broadcast(ad.shape, bd.shape)
    return apply(MINIMUM, (input, other), (ad, bd))


# ---------------------------------------------------------------------------- comparisons
# Note [Non-differentiable ops in the table]
# Comparisons, logical and bitwise ops and the isnan family are ops of the table with no VJP
# rule (``Op(..., differentiable=False)`` by having ``vjp=None``): eagerly ``apply`` runs the
# forward and never records a node; the jit tracer records them as op nodes like any other op,
# so a VJP rule that builds a mask from them (clamp, where, maximum ...) records symbolically.
# One op per (function, form): ``<name>`` on two tensors, ``<name>_scalar`` with a Python
# number as argument. Their batching rule is the pointwise one (``COMPARISON_OPS``).
# Eagerly, with no tracer and no batched backward active, such an op's call is just its forward
# wrapped (``apply_nondiff``): nothing else of ``apply`` would do anything for a bool or int64
# result of an op without VJP (no node, no tangent), and VJP rules that build masks (clamp,
# maximum ...) stay as cheap as with raw NumPy.
def apply_nondiff(op: Op, tensors: tuple, arrays: tuple, args: tuple = ()) -> Any:
    """``apply(op, tensors, arrays, args)`` for an op without VJP rule (Note [Non-differentiable
    ops in the table])."""
    if _dispatch._TRACING or _dispatch._BATCHING or _dispatch._META:
        return apply(op, tensors, arrays, args)
    if _dispatch._UNSIGNED:              # Note [Barebones unsigned dtypes] in _dtype.py
        _unsigned.check(op.name, arrays, args, op.node_name)
    out = op.forward(*arrays, *args)
    return _wrap(out) if op.num_outputs == 1 else tuple(_wrap(o) for o in out)


def _nd_op(name: str, forward: Callable, inputs: tuple = ("self", "other"),
           args: tuple = ()) -> Op:
    return Op(name, "".join(p.capitalize() for p in name.split("_")) + "Backward0", forward, None,
              inputs=inputs, args=args, jvp=zero)


def _pair_op(name: str, ufunc: Any) -> tuple:
    return (_nd_op(name, ufunc), _nd_op(name, ufunc, ("self",), ("other",)))


_CMP_OPS = {u.__name__: _pair_op(n, u) for n, u in (
    ("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
    ("gt", np.greater), ("ge", np.greater_equal))}


def _compare(ufunc, kernel: str, ordered: bool):
    op_t, op_s = _CMP_OPS[ufunc.__name__]

    def fn(input: Any, other: Any) -> Tensor:
        if not isinstance(input, Tensor):
            input = to_tensor(input)
        if isinstance(other, Tensor):
            ad, bd = promote_pair(input, other)
            if ordered:
                _check_broadcast(ad.shape, bd.shape)      # shapes are checked first
                _not_implemented_for(kernel, ad, "c")
            try:
                if _dispatch._TRACING or _dispatch._BATCHING:      # apply_nondiff, inlined
                    return apply(op_t, (input, other), (ad, bd))
                if _dispatch._UNSIGNED:
                    _unsigned.check(op_t.name, (ad, bd))
                return _wrap(ufunc(ad, bd))
            except ValueError:
                raise broadcast_error(ad.shape, bd.shape) from None
        if is_scalar(other):
            ad, other = scalar_operand(input._data, as_scalar(other))
            dt = ad.dtype
            if dt is _F16 or dt is _BF16:      # the number through float32 (Note [Double to half])
                other = _dtype.number_in(other, dt)
            if ordered:
                _not_implemented_for(kernel, ad, "c")
            if _dispatch._TRACING or _dispatch._BATCHING:
                return apply(op_s, (input,), (ad,), (other,))
            if _dispatch._UNSIGNED:
                _unsigned.check(op_s.name, (ad,))
            return _wrap(ufunc(ad, other))
        if isinstance(other, (np.ndarray, list, tuple)):
            return fn(input, to_tensor(other))
        return NotImplemented
    fn.__name__ = ufunc.__name__
    fn.__doc__ = f"Elementwise ``{ufunc.__name__}`` returning a bool tensor (not differentiable)."
    return fn


eq = _compare(np.equal, "eq_cpu", False)
ne = _compare(np.not_equal, "ne_cpu", False)
lt = _compare(np.less, "lt_cpu", True)
le = _compare(np.less_equal, "le_cpu", True)
gt = _compare(np.greater, "gt_cpu", True)
ge = _compare(np.greater_equal, "ge_cpu", True)


def _tensor_arg(x: Any, fn: str, arg: str, pos: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def equal(input: Tensor, other: Tensor) -> bool:
    """True if ``input`` and ``other`` have the same shape and equal elements (compared in
    their promoted dtype; NaN is never equal). A Python bool.

    >>> import ndgrad
    >>> ndgrad.equal(ndgrad.tensor([1, 2]), ndgrad.tensor([1.0, 2.0]))
    True
    """
    _tensor_arg(input, "equal", "input", 1)
    _tensor_arg(other, "equal", "other", 2)
    _dispatch.meta_refuse("equal", input, other)
    if input._data.shape != other._data.shape:
        return False
    a, b = promote_pair(input, other)
    return bool(np.array_equal(a, b))


def _tolerance(value: Any, fn: str, name: str) -> float:
    if isinstance(value, Tensor):
        value = value.item()
    if not isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
        raise TypeError(f"{fn}(): argument '{name}' must be float, not {type(value).__name__}")
    value = float(value)
    if not value >= 0:
        raise RuntimeError(f"{name} must be greater than or equal to zero, but got {value:g}")
    return value


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False, *, _fn: str = "isclose") -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (or equal), as a bool tensor.
    Both tensors must have the same dtype; integers are compared in the default float dtype.

    >>> import ndgrad
    >>> ndgrad.isclose(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 2.1]))
    tensor([ True, False])
    """
    _tensor_arg(input, _fn, "input", 1)
    _tensor_arg(other, _fn, "other", 2)
    rtol = _tolerance(rtol, _fn, "rtol")
    atol = _tolerance(atol, _fn, "atol")
    a, b = input._data, other._data
    if a.dtype != b.dtype:
        raise RuntimeError(f"{_dtype._FROM_NP[a.dtype]._torch_name} did not match "
                           f"{_dtype._FROM_NP[b.dtype]._torch_name}")
    _check_broadcast(a.shape, b.shape)
    close = a == b
    if equal_nan and category(a) >= _FLOAT:
        close = close | (np.isnan(a) & np.isnan(b))
    if rtol == 0 and atol == 0:
        return _wrap(np.asanyarray(close))        # (a meta array stays one)
    if category(a) < _FLOAT:
        a, b = to_float(a), to_float(b)
    err = np.abs(a - b)
    allowed = atol + np.abs(rtol * b)
    return _wrap(np.asanyarray(close | (np.isfinite(err) & (err <= allowed))))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True if every element of ``input`` is close to ``other``'s (see ``isclose``).

    >>> import ndgrad
    >>> ndgrad.allclose(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 2.0000001]))
    True
    """
    _dispatch.meta_refuse("allclose", input, other)
    return bool(isclose(input, other, rtol, atol, equal_nan, _fn="allclose")._data.all())


_BITWISE_OPS: dict = {}


def _logical(ufunc, name):
    op_t, op_s = _BITWISE_OPS[name] = _pair_op(name, ufunc)

    def fn(input: Any, other: Any) -> Tensor:
        if not isinstance(input, Tensor):
            if not isinstance(other, Tensor):
                raise TypeError(f"{name}() received an invalid combination of arguments - got "
                                f"({type(input).__name__}, {type(other).__name__})")
            input = to_tensor(input)
        o = other._data if isinstance(other, Tensor) else other
        if input._data.dtype.kind in "fc" or (isinstance(o, np.ndarray) and o.dtype.kind in "fc"):
            bad = input._data.dtype if input._data.dtype.kind in "fc" else o.dtype
            raise RuntimeError(f"\"{name}_cpu\" not implemented for "
                               f"'{_dtype._FROM_NP[bad]._torch_name}'")
        if isinstance(other, Tensor):
            return apply_nondiff(op_t, (input, other), promote_pair(input, other))
        if type(o) is int:
            ad, s = scalar_operand(input._data, o)
            return apply_nondiff(op_s, (input,), (ad,), (s,))
        return apply_nondiff(op_s, (input,), (input._data,), (o,))
    fn.__name__ = name
    fn.__doc__ = (f"Elementwise {name.replace('_', ' ')} of two integer or bool operands "
                  "(``other`` may be a Python scalar).")
    return fn


bitwise_and = _logical(np.bitwise_and, "bitwise_and")
bitwise_or = _logical(np.bitwise_or, "bitwise_or")
bitwise_xor = _logical(np.bitwise_xor, "bitwise_xor")
BITWISE_NOT = _nd_op("bitwise_not", np.invert, ("self",))
LOGICAL_NOT = _nd_op("logical_not", np.logical_not, ("self",))


def bitwise_not(input: Tensor) -> Tensor:
    """Elementwise bit inversion (logical NOT for bool); integer/bool only."""
    if input._data.dtype.kind in "fc":
        raise NotImplementedError("\"bitwise_not_cpu\" not implemented for "
                           f"'{_dtype._FROM_NP[input._data.dtype]._torch_name}'")
    return apply_nondiff(BITWISE_NOT, (input,), (input._data,))


def logical_not(input: Tensor) -> Tensor:
    """Bool tensor, True where ``input`` is zero."""
    return apply_nondiff(LOGICAL_NOT, (input,), (input._data,))


_LOGICAL_OPS = {n: _nd_op(n, u) for n, u in (("logical_and", np.logical_and),
                                              ("logical_or", np.logical_or),
                                              ("logical_xor", np.logical_xor))}


def _logical_binary(ufunc: Any, input: Tensor, other: Any) -> Tensor:
    ot = to_tensor(other)
    a, b = input._data, ot._data
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise broadcast_error(a.shape, b.shape) from None
    return apply_nondiff(_LOGICAL_OPS[ufunc.__name__], (input, ot), (a, b))


def logical_and(input: Tensor, other: Any) -> Tensor:
    """Bool tensor, True where both ``input`` and ``other`` are nonzero."""
    return _logical_binary(np.logical_and, input, other)


def logical_or(input: Tensor, other: Any) -> Tensor:
    """Bool tensor, True where ``input`` or ``other`` is nonzero."""
    return _logical_binary(np.logical_or, input, other)


def logical_xor(input: Tensor, other: Any) -> Tensor:
    """Bool tensor, True where exactly one of ``input`` and ``other`` is nonzero."""
    return _logical_binary(np.logical_xor, input, other)


def _isposinf_fwd(x: np.ndarray) -> np.ndarray:
    return np.isposinf(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)


def _isneginf_fwd(x: np.ndarray) -> np.ndarray:
    return np.isneginf(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)


def _isreal_fwd(x: np.ndarray) -> np.ndarray:
    return x.imag == 0 if x.dtype.kind == "c" else np.ones(x.shape, bool)


ISPOSINF = _nd_op("isposinf", _isposinf_fwd, ("self",))
ISNEGINF = _nd_op("isneginf", _isneginf_fwd, ("self",))
ISREAL = _nd_op("isreal", _isreal_fwd, ("self",))
ISNAN = _nd_op("isnan", np.isnan, ("self",))
ISFINITE = _nd_op("isfinite", np.isfinite, ("self",))
ISINF = _nd_op("isinf", np.isinf, ("self",))


def isposinf(input: Tensor) -> Tensor:
    """Bool tensor, True where ``input`` is positive infinity (complex input is refused)."""
    _no_complex(input, "isposinf")
    return apply_nondiff(ISPOSINF, (input,), (input._data,))


def isneginf(input: Tensor) -> Tensor:
    """Bool tensor, True where ``input`` is negative infinity (complex input is refused)."""
    _no_complex(input, "isneginf")
    return apply_nondiff(ISNEGINF, (input,), (input._data,))


def _no_complex(input: Tensor, name: str) -> None:
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{name} does not support complex inputs.")


def isreal(input: Tensor) -> Tensor:
    """Bool tensor, True where ``input`` has no imaginary part (always, for real dtypes)."""
    return apply_nondiff(ISREAL, (input,), (input._data,))


def isnan(input: Tensor) -> Tensor:
    """Bool tensor, True where ``input`` is NaN."""
    return apply_nondiff(ISNAN, (input,), (input._data,))


def isfinite(input: Tensor) -> Tensor:
    """Bool tensor, True where ``input`` is neither infinite nor NaN."""
    return apply_nondiff(ISFINITE, (input,), (input._data,))


def isinf(input: Tensor) -> Tensor:
    """Bool tensor, True where ``input`` is positive or negative infinity."""
    return apply_nondiff(ISINF, (input,), (input._data,))


# Every op above: elementwise, batched by the pointwise rule (ops/_batching.py).
COMPARISON_OPS = (tuple(o for pair in _CMP_OPS.values() for o in pair) +
                  tuple(o for pair in _BITWISE_OPS.values() for o in pair) +
                  (BITWISE_NOT, LOGICAL_NOT, ISPOSINF, ISNEGINF, ISREAL, ISNAN, ISFINITE, ISINF) +
                  tuple(_LOGICAL_OPS.values()))


# ---------------------------------------------------------------------------- copies and casts
def _to_vjp(ctx, g):
    dt = ctx.input_dtype(0)
    if dt.kind != "c" and g._data.dtype.kind == "c":
        g = g.real_part()
    return g.to(_dtype._FROM_NP[dt])


def _to_fwd(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    if x.dtype.kind == "c" and dt.kind != "c":
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=4)
        x = x.real
    if not (x.flags.c_contiguous or is_non_overlapping_and_dense(x)):
        x = _layout.preserve_copy(x)     # Note [Preserved layouts]
    return _dtype.cast(x, dt)      # Note [Double to half]


TO = Op("to", "ToCopyBackward0", _to_fwd, _to_vjp, args=("dtype",), jvp=linear)
CLONE = Op("clone", "CloneBackward0", _layout.preserve_copy,  # Note [Preserved layouts]
           lambda ctx, g: g, jvp=linear)
COPY_LIKE = Op("_copy_like_layout", "CopyBackwards", lambda x, like: _empty_like_copy(x, like),
               lambda ctx, g: g, args=("like",), full_name="torch::autograd::CopyBackwards",
               jvp=linear)
# Copies into a given memory format (``contiguous(memory_format=...)``, ``to(memory_format=...)``).
CLONE_FMT = Op("clone", "CloneBackward0", lambda x, fmt: _layout.copy_to(x, fmt),
               lambda ctx, g: g, args=("memory_format",), jvp=linear)
TO_META = Op("to", "ToCopyBackward0", lambda x, dt: _meta.like(x, dtype=dt),
             lambda ctx, g: g.to("cpu"), args=("dtype",), jvp=linear)
TO_FMT = Op("to", "ToCopyBackward0", lambda x, dt, fmt: _layout.copy_to(_to_fwd(x, dt), fmt),
            _to_vjp, args=("dtype", "memory_format"), jvp=linear)
REAL = Op("real", "RealBackward0", lambda x: x.real.copy(), lambda ctx, g: g,
          jvp=linear)


def _empty_like_copy(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    # AccumulateGrad's copy of a gradient it cannot steal: large ones aligned (Note [Aligned
    # arrays]), as the products whose gradients they usually are
    if like.flags.c_contiguous:
        out = _aligned.empty(like.shape, x.dtype)
    elif is_non_overlapping_and_dense(like):
        out = np.empty_like(like, dtype=x.dtype, order="K")
    else:
        out = np.empty(like.shape, dtype=x.dtype)
    np.copyto(out, x)
    return out


def to(input: Tensor, *positional: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
    """Cast to ``dtype`` and/or lay out in ``memory_format`` (``device`` must be cpu); returns
    ``input`` if nothing changes."""
    # PyTorch's three overloads: to(dtype, non_blocking, copy), to(device, dtype, non_blocking,
    # copy), to(other, non_blocking, copy); the trailing positional bools are non_blocking, copy.
    args = list(positional)
    target = None                       # the device asked for
    if args and isinstance(args[0], Tensor):
        target = args[0].device
        dtype = args.pop(0).dtype
    elif args and type(args[0]) is int:   # a device index: an accelerator ndgrad does not have
        raise RuntimeError("Device index must not be negative" if args[0] < 0 else
                           "Cannot access accelerator device when none is available.")
    elif args and (args[0] is None or isinstance(args[0], (str, _device))):
        if args[0] is not None:
            target = check_device(args.pop(0), moving=True)
        else:
            args.pop(0)
        if args and not isinstance(args[0], builtins.bool):
            dtype = args.pop(0)
    elif args and not isinstance(args[0], builtins.bool):
        dtype = args.pop(0)
    if len(args) > 2 or not all(isinstance(a, builtins.bool) for a in args):
        raise TypeError("to() received an invalid combination of arguments - got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    if len(args) == 2:
        kwargs.setdefault("copy", args[1])
    if kwargs.get("device") is not None:
        target = check_device(kwargs["device"], moving=True)
    fmt = _layout.check(kwargs.get("memory_format"), "to")
    copy = kwargs.get("copy")
    x = input._data
    if target is not None and (target.type == "meta") != (type(x) is _MetaArray):
        # Note [Meta arrays]: to the meta device (a differentiable copy), never out of it
        if type(x) is _MetaArray:
            raise NotImplementedError(META_COPY_MSG)
        dt = _dtype.to_dtype(dtype).np if dtype is not None else x.dtype
        return apply(TO_META, (input,), (x,), (dt,))
    if fmt is not _layout.preserve_format:
        _layout.check_rank(x.ndim, fmt)
        dt = _dtype.to_dtype(dtype).np if dtype is not None else x.dtype
        if dt == x.dtype and not copy and _layout.is_contiguous(x, fmt):
            return input
        return apply(TO_FMT, (input,), (x,), (dt, fmt))
    if dtype is None:
        return input.clone() if copy else input
    d = _dtype.to_dtype(dtype)
    if d.np == x.dtype and not copy:
        return input
    return apply(TO, (input,), (x,), (d.np,))


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy of ``input`` with its own storage (laid out in ``memory_format``, by default like
    ``input``); gradients flow back to ``input``."""
    if memory_format is None:
        return apply(CLONE, (input,), (input._data,))
    fmt = _layout.check(memory_format, "clone")
    if fmt is _layout.preserve_format:
        return apply(CLONE, (input,), (input._data,))
    _layout.check_rank(input._data.ndim, fmt)
    return apply(CLONE_FMT, (input,), (input._data,), (fmt,))


def _copy_like_layout(grad: Tensor, like: Tensor) -> Tensor:
    """A copy of ``grad`` laid out like ``like`` (the gradient layout contract)."""
    return apply(COPY_LIKE, (grad,), (grad._data,), (like._data,))


# AccumulateGrad (the runtime, a layer below: Note [Layers]) copies gradients with it.
_accumulate_grad._copy_like_layout = _copy_like_layout


def real_part(input: Tensor) -> Tensor:
    """The real part of a complex tensor; any other tensor is returned as is."""
    if input._data.dtype.kind != "c":
        return input
    return apply(REAL, (input,), (input._data,))
