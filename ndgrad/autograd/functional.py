"""Higher-level differentiation of functions: ``vjp``, ``jvp``, ``jacobian``, ``hessian``,
``hvp`` and ``vhp``, with PyTorch's signatures, result structures and ``strict`` errors.

``func`` takes the input tensors (a Tensor or a tuple of Tensors) and returns a Tensor or a
tuple of Tensors; results mirror those structures (a single Tensor in, a single Tensor out).
Inputs are never modified: they are detached (or, with ``create_graph=True``, aliased by a
view) before ``func`` sees them, and results are detached unless ``create_graph=True``.

``jvp`` and ``hvp`` use the double-backward trick, as PyTorch does: ``J^T u`` is linear in a
dummy ``u``, so ``J v`` is the gradient of ``<J^T u, v>`` with respect to ``u``:
``grad(grad(f, x, u), u, v)``. ``jacobian(..., vectorize=True)`` computes all rows (reverse
mode) in one backward pass carrying a batch dimension (Note [Batched backward] in
batching.py), or all columns (``strategy="forward-mode"``) in one forward pass with forward AD
on a batch of unit tangents (Note [Batched tangents] in forward_ad.py); ``vectorize=False``
loops over rows. ``hessian(..., outer_jacobian_strategy="forward-mode")`` is thus
forward-over-reverse: forward AD through the computation of the gradient.

Example:
    >>> import ndgrad
    >>> from ndgrad.autograd.functional import jacobian, hessian
    >>> x = ndgrad.tensor([1.0, 2.0])
    >>> jacobian(lambda t: t ** 2, x)
    tensor([[2., 0.],
            [0., 4.]])
    >>> hessian(lambda t: (t ** 3).sum(), x)
    tensor([[ 6.,  0.],
            [ 0., 12.]])
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from importlib import import_module

from .._creation import zeros_like
from ..tensor import Tensor
from ..ops import stack
from . import forward_ad as fwAD
from .api import _grad_rows
from .api import grad as _grad
from .batching import batch_level
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

_tensor_mod = import_module("ndgrad.tensor")  # the module; ndgrad.tensor is also a function

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

TensorOrTuple = Union[Tensor, Tuple[Tensor, ...]]


# ---------------------------------------------------------------------------- helpers
def _as_tuple(x: Any, what: Optional[str], fn: Optional[str]) -> Tuple[bool, tuple]:
    """``(was_tuple, tuple_of_tensors)``; only a tuple counts as several tensors, as in PyTorch
    (a list is one, wrong, value)."""
    was_tuple = isinstance(x, tuple)
    items = x if was_tuple else (x,)
    for i, el in enumerate(items):
        if not isinstance(el, _tensor_mod.Tensor):
            where = f"the value at index {i}" if was_tuple else f"the given {what}"
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of "
                            f"Tensors but {where} has type {type(el)}.")
    return was_tuple, items


def _unpack(res: Any, was_tuple: Any) -> Any:
    """Give ``res`` back the structure of the arguments: ``was_tuple`` is one flag (a tuple of
    results) or two (a tuple of tuples: outputs by inputs)."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            res = tuple(r[0] for r in res)
        return res if outer else res[0]
    return res if was_tuple else res[0]


def _prepare_inputs(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh tensors for ``func``: a view keeps an input's history when a graph is built,
    otherwise a detached alias (requiring grad when ``need_graph``)."""
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(need_graph))
    return tuple(out)


def _finish(res: Any, create_graph: bool) -> Any:
    """Detach results (tuples, possibly nested) unless a graph was asked for."""
    if create_graph:
        return res
    if isinstance(res, tuple):
        return tuple(_finish(r, False) for r in res)
    return res.detach()


def _check_v(v: tuple, ref: tuple, ref_is_tuple: bool) -> None:
    if len(v) != len(ref):
        if ref_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(ref)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, ref)):
        if a.shape != b.shape:
            where = f"Entry {i} in " if ref_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.shape} but got "
                               f"{a.shape}.")


_STRICT_MESSAGES = {
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when running "
                "in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the "
                    "user-provided function. This is not allowed in strict mode."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided "
                 "function with respect to input {i} is independent of the input. This is not "
                 "allowed in strict mode. You should ensure that your function is twice "
                 "differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "hessian": ("The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is thrice differentiable and that the hessian depends on the "
                "inputs."),
}


def _strict_requires_grad(tensors: Sequence[Any], kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[kind].format(i=i))


def _grad_of(outputs: tuple, inputs: tuple, grad_outputs: Optional[tuple] = None,
             create_graph: bool = False, retain_graph: Optional[bool] = None,
             batched: bool = False) -> tuple:
    """``autograd.grad`` over the outputs that require grad (all None if none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _grad([p[0] for p in pairs], inputs, [p[1] for p in pairs], allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph, is_grads_batched=batched)


_ZERO_MESSAGES = {
    "back": ("The output of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}


def _zeros_for_none(grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                    stage: str) -> tuple:
    """Replace missing gradients by zeros shaped like ``refs`` (strict mode refuses them)."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_MESSAGES[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        out.append(g)
    return tuple(out)


def _single_scalar_output(outputs: tuple, was_tuple: bool, fn: str) -> None:
    if was_tuple or not isinstance(outputs[0], _tensor_mod.Tensor):
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a "
                           "single element")


def _v_or_scalar(v: Any, ref: tuple, ref_is_tuple: bool, create_graph: bool, fn: str,
                 about: str) -> Optional[tuple]:
    """Check and prepare ``v``; None is allowed when ``ref`` is one single-element tensor."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn)
        v = _prepare_inputs(v, create_graph=create_graph, need_graph=False)
        _check_v(v, ref, ref_is_tuple)
        return v
    if len(ref) != 1 or ref[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if {about} a single Tensor with a "
                           "single element.")
    return None


def _basis(tensors: tuple) -> tuple:
    """One standard basis vector per element of all ``tensors`` together: chunk ``k`` has shape
    ``(total, *tensors[k].shape)`` and row ``r`` is ``e_r`` restricted to tensor ``k``."""
    sizes = [t.numel() for t in tensors]
    total = sum(sizes)
    out, start = [], 0
    for t, n in zip(tensors, sizes):
        chunk = np.zeros((total, n), dtype=t._data.dtype)
        chunk[np.arange(start, start + n), np.arange(n)] = 1
        out.append(_tensor_mod._wrap(chunk.reshape((total,) + tuple(t.shape))))
        start += n
    return tuple(out)


# ---------------------------------------------------------------------------- vjp / jvp
def vjp(func: Callable[..., Any], inputs: TensorOrTuple, v: Optional[TensorOrTuple] = None,
        create_graph: bool = False, strict: bool = False) -> Tuple[Any, Any]:
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``.

    ``v`` has the structure of ``func``'s outputs and may be omitted for a single-element
    output; the product has the structure of ``inputs``.

    >>> import ndgrad
    >>> from ndgrad.autograd.functional import vjp
    >>> vjp(lambda x: x * 3, ndgrad.ones(2), ndgrad.tensor([1.0, 2.0]))
    (tensor([3., 3.]), tensor([3., 6.]))
    """
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare_inputs(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "vjp")
        _strict_requires_grad(outputs, "outputs", strict)
        v = _v_or_scalar(v, outputs, out_tuple, create_graph, "vjp",
                         "the user-provided function returns")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _grad_of(outputs, inputs, v, create_graph=create_graph)
        res = _zeros_for_none(res, inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))


def _v_about_inputs(v: Any, inputs: tuple, in_tuple: bool, create_graph: bool,
                    fn: str) -> Optional[tuple]:
    return _v_or_scalar(v, inputs, in_tuple, create_graph, fn,
                        "the input to the user-provided function is")


def jvp(func: Callable[..., Any], inputs: TensorOrTuple, v: Optional[TensorOrTuple] = None,
        create_graph: bool = False, strict: bool = False) -> Tuple[Any, Any]:
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs`` (double backward).

    ``v`` has the structure of ``inputs`` (optional for one single-element input); the product
    has the structure of the outputs.

    >>> import ndgrad
    >>> from ndgrad.autograd.functional import jvp
    >>> jvp(lambda x: x ** 2, ndgrad.tensor([1.0, 2.0]), ndgrad.ones(2))[1]
    tensor([2., 4.])
    """
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare_inputs(inputs, create_graph, need_graph=True)
        v = _v_about_inputs(v, inputs, in_tuple, create_graph, "jvp")
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "jvp")
        _strict_requires_grad(outputs, "outputs", strict)
        dummies = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        g = _grad_of(outputs, inputs, dummies, create_graph=True)
        _strict_requires_grad(g, "grad_inputs", strict)
    with set_grad_enabled(True) if create_graph else nullcontext():
        res = _grad_of(g, dummies, v, create_graph=create_graph)
        res = _zeros_for_none(res, outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), out_tuple))


# ---------------------------------------------------------------------------- jacobian
def _jacobian_reverse_vectorized(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple:
    """All rows at once: one batched backward seeded with the standard basis of the outputs."""
    numels = [o.numel() for o in outputs]
    flat = tuple(o.reshape(-1) for o in outputs)
    seeds = tuple(s.reshape(s.shape[0], -1) for s in _basis(outputs))
    rows = list(_grad_of(flat, inputs, seeds, create_graph=create_graph, batched=True))
    total = sum(numels)
    for j, r in enumerate(rows):
        if r is None:
            rows[j] = zeros_like(inputs[j]).expand((total,) + tuple(inputs[j].shape))
    per_input = []
    for r, x in zip(rows, inputs):
        per_input.append([part.view(tuple(o.shape) + tuple(x.shape))
                          for part, o in zip(r.split(numels, 0), outputs)])
    return tuple(zip(*per_input))


def _one_hots(out: Any) -> Any:
    """The standard basis of ``out``'s shape and dtype, one fresh tensor at a time."""
    data = out._data
    for e in range(data.size):
        seed = np.zeros(data.shape, data.dtype)
        seed.flat[e] = 1
        yield _tensor_mod._wrap(seed)


def _jacobian_reverse_loop(outputs: tuple, inputs: tuple, create_graph: bool,
                           strict: bool) -> tuple:
    """One backward per output element."""
    jac = []
    for i, out in enumerate(outputs):
        rows: list = [[] for _ in inputs]
        # Note [Jacobian rows by one-hot seeds]: row ``e`` is the gradient of ``out`` seeded
        # with the one-hot vector e_e, the same numbers PyTorch gets from ``out.reshape(-1)[e]``
        # without the reshape and select nodes in every row's backward. A complex output keeps
        # the select, whose implicit seed raises PyTorch's "real scalar outputs" error.
        if out._data.dtype.kind == "f" and out.requires_grad:
            results = _grad_rows(out, inputs, _one_hots(out), create_graph)
        else:
            flat = out.reshape(-1)
            results = (_grad_of((flat[e],), inputs, retain_graph=True,
                                create_graph=create_graph) for e in range(out.numel()))
        for res in results:
            for j, (r, x) in enumerate(zip(res, inputs)):
                if r is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {j}. This is not allowed in "
                                           "strict mode.")
                    r = zeros_like(x)
                elif strict and create_graph and not r.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       "strict mode when create_graph=True.")
                rows[j].append(r)
        jac.append(tuple(stack(rows[j], 0).view(tuple(out.shape) + tuple(x.shape))
                         for j, x in enumerate(inputs)))
    return tuple(jac)


def _jacobian_forward(func: Callable[..., Any], inputs: Any, strict: bool,
                      vectorize: bool) -> Any:
    """Forward mode: all columns ``J e_k`` in one forward pass with forward AD, the tangents
    being the standard basis batched along a leading dimension (Note [Batched tangents])."""
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and '
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    numels = [x.numel() for x in inputs]
    total = sum(numels)
    with batch_level() as blevel:
        tangents = _basis(inputs)
        for t in tangents:
            t._blevel = blevel
        with fwAD.dual_level() as level:
            duals = tuple(fwAD.make_dual(x.detach(), t, level=level)
                          for x, t in zip(inputs, tangents))
            # PyTorch's message here says "given to None"; kept identical.
            out_tuple, outputs = _as_tuple(func(*duals), "outputs", None)
            cols = []
            for o in outputs:
                c = fwAD.unpack_dual(o, level=level).tangent
                cols.append((c, c is not None and c._blevel == blevel))
            outputs = tuple(o.detach() for o in outputs)
    # Lists, not tuples, where several outputs or inputs are involved: PyTorch's structure.
    jac = []
    for o, (c, batched) in zip(outputs, cols):
        if c is None:
            c = zeros_like(o).expand((total,) + tuple(o.shape))
        elif not batched:           # the same for every column
            c = c.detach().unsqueeze(0).expand((total,) + tuple(o.shape))
        else:
            c._blevel = 0
            c = c.detach()
        parts = c.split(numels, 0)
        jac.append([part.movedim(0, -1).reshape(tuple(o.shape) + tuple(x.shape))
                    for part, x in zip(parts, inputs)])
    return _unpack(jac, (out_tuple, in_tuple))


def jacobian(func: Callable[..., Any], inputs: TensorOrTuple, create_graph: bool = False,
             strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``.

    For one input and one output the result is a Tensor of shape ``out.shape + in.shape``;
    with a tuple of inputs and/or outputs it is a tuple (of tuples) ``[i][j]`` for output ``i``
    and input ``j``. ``vectorize=True`` computes it in one batched backward pass;
    ``strategy="forward-mode"`` (needs ``vectorize=True``) gets all columns in one forward pass
    with forward AD, which suits functions with more outputs than inputs.

    >>> import ndgrad
    >>> from ndgrad.autograd.functional import jacobian
    >>> w = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> jacobian(lambda x: w @ x, ndgrad.ones(2), vectorize=True)
    tensor([[1., 2.],
            [3., 4.]])
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` '
                                      'and `strategy="forward-mode"` are not supported together '
                                      '(yet). Please either set `create_graph=False` or '
                                      '`strategy="reverse-mode"`.')
        return _jacobian_forward(func, inputs, strict, vectorize)
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare_inputs(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "jacobian")
        _strict_requires_grad(outputs, "outputs", strict)
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                                   "`vectorized=True` are not supported together. Please "
                                   "either set `strict=False` or `vectorize=False`.")
            jac = _jacobian_reverse_vectorized(outputs, inputs, create_graph)
        else:
            jac = _jacobian_reverse_loop(outputs, inputs, create_graph, strict)
        return _unpack(_finish(jac, create_graph), (out_tuple, in_tuple))


# ---------------------------------------------------------------------------- second order
def hessian(func: Callable[..., Any], inputs: TensorOrTuple, create_graph: bool = False,
            strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of the scalar function ``func`` at ``inputs``: the Jacobian of its gradient.

    One input gives a Tensor of shape ``in.shape + in.shape``; a tuple of inputs gives a tuple
    of tuples ``[i][j]``. ``vectorize`` and ``outer_jacobian_strategy`` apply to the outer
    Jacobian (see :func:`jacobian`).

    >>> import ndgrad
    >>> from ndgrad.autograd.functional import hessian
    >>> hessian(lambda x: (x[0] * x[1]) ** 2, ndgrad.tensor([1.0, 2.0]), vectorize=True)
    tensor([[8., 8.],
            [8., 2.]])
    """
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*xs: Any) -> Any:
        out = func(*xs)
        was_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _strict_requires_grad(outs, "outputs", strict)
        if was_tuple or not isinstance(out, _tensor_mod.Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def gradient(*xs: Any) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            xs = tuple(x.requires_grad_(True) for x in xs)
        g = _scalar_gradient(scalar_func, xs)
        _strict_requires_grad(g, "jacobian", strict)
        return g

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpack(res, (in_tuple, in_tuple))


def _scalar_gradient(scalar_func: Callable[..., Any], xs: tuple) -> tuple:
    """``jacobian(scalar_func, xs, create_graph=True)`` for a function with one 0-d output
    (hessian's inner Jacobian): the gradient itself (zeros where independent), without the
    select, stack and view nodes that the general loop would put into every row of the outer
    Jacobian's backward."""
    with enable_grad():
        inputs = _prepare_inputs(xs, True, need_graph=True)
        out = scalar_func(*inputs)
        res = _grad_of((out,), inputs, retain_graph=True, create_graph=True)
        return tuple(r if r is not None else zeros_like(x) for r, x in zip(res, inputs))


def _scalar_and_gradient(func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool,
                         strict: bool, fn: str
                         ) -> Tuple[bool, tuple, Optional[tuple], bool, tuple, tuple]:
    in_tuple, inputs = _as_tuple(inputs, "inputs", fn)
    inputs = _prepare_inputs(inputs, create_graph, need_graph=True)
    v = _v_about_inputs(v, inputs, in_tuple, create_graph, fn)
    out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn)
    _strict_requires_grad(outputs, "outputs", strict)
    _single_scalar_output(outputs, out_tuple, fn)
    g = _grad_of(outputs, inputs, create_graph=True)
    _strict_requires_grad(g, "jacobian", strict)
    return in_tuple, inputs, v, out_tuple, outputs, g


def vhp(func: Callable[..., Any], inputs: TensorOrTuple, v: Optional[TensorOrTuple] = None,
        create_graph: bool = False, strict: bool = False) -> Tuple[Any, Any]:
    """``(func(inputs), v^T H)`` for a scalar ``func``: a vector-Hessian product.

    >>> import ndgrad
    >>> from ndgrad.autograd.functional import vhp
    >>> vhp(lambda x: (x ** 3).sum(), ndgrad.tensor([1.0, 2.0]), ndgrad.ones(2))[1]
    tensor([ 6., 12.])
    """
    with enable_grad():
        in_tuple, inputs, v, out_tuple, outputs, g = _scalar_and_gradient(
            func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _grad_of(g, inputs, v, create_graph=create_graph)
        res = _zeros_for_none(res, inputs, strict, create_graph, "double_back")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))


def hvp(func: Callable[..., Any], inputs: TensorOrTuple, v: Optional[TensorOrTuple] = None,
        create_graph: bool = False, strict: bool = False) -> Tuple[Any, Any]:
    """``(func(inputs), H v)`` for a scalar ``func``: a Hessian-vector product (by the double
    backward trick; equal to ``vhp`` for twice continuously differentiable functions).

    >>> import ndgrad
    >>> from ndgrad.autograd.functional import hvp
    >>> hvp(lambda x: (x ** 3).sum(), ndgrad.tensor([1.0, 2.0]), ndgrad.ones(2))[1]
    tensor([ 6., 12.])
    """
    with enable_grad():
        in_tuple, inputs, v, out_tuple, outputs, g = _scalar_and_gradient(
            func, inputs, v, create_graph, strict, "hvp")
        dummies = tuple(zeros_like(x, requires_grad=True) for x in inputs)
        double = _grad_of(g, inputs, dummies, create_graph=True)
        _strict_requires_grad(double, "hessian", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _grad_of(double, dummies, v, create_graph=create_graph)
        res = _zeros_for_none(res, inputs, strict, create_graph, "double_back_trick")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))
