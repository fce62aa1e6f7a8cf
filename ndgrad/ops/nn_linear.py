"""nn op family: ``linear`` and ``bilinear``, as compositions of the product ops recording
what PyTorch records (``F.linear`` of a 2-d input with a bias is one ``addmm``, so its
``grad_fn`` is ``AddmmBackward0``; other contiguous inputs with a bias are flattened to 2-d
around the ``addmm``; without a bias it is a ``matmul``).

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> x = ndgrad.ones(2, 3, requires_grad=True)
    >>> w = ndgrad.ones(4, 3, requires_grad=True)
    >>> y = F.linear(x, w, ndgrad.zeros(4, requires_grad=True))
    >>> y.shape, type(y.grad_fn).__name__
    (ndgrad.Size([2, 4]), 'AddmmBackward0')
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._dtype import _FROM_NP
from ..tensor import Tensor, _c_name
from . import products as _products
from . import rearrange as _rearrange  # noqa: F401  (Tensor.view/reshape are installed)
from ._batching import call as _bcall
from ._dispatch import Op, apply
from . import _autocast

__all__ = ["linear", "bilinear"]


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``input @ weight.T + bias`` (``torch.nn.functional.linear``)."""
    if _autocast.active:  # Note [Autocast]
        input, weight, bias = _autocast.lower(input, weight, bias)
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are "
                           f"{input.dim()}D and {weight.dim()}D")
    wt = weight.t()
    if bias is not None:
        if bias._data.dtype != weight._data.dtype and (input.dim() == 2 or (
                input.is_contiguous() and weight.dim() == 2)):
            raise RuntimeError("self and mat2 must have the same dtype, but got "
                               f"{_FROM_NP[bias._data.dtype]._torch_name} and "
                               f"{_FROM_NP[weight._data.dtype]._torch_name}")
        if input.dim() == 2:
            return _products.addmm(bias, input, wt)
        if input.is_contiguous() and weight.dim() == 2:
            flat = input.view(-1, input.shape[-1])
            out = _products.addmm(bias, flat, wt)
            return out.view(*input.shape[:-1], out.shape[-1])
        return input.matmul(wt) + bias
    return input.matmul(wt)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Optional[Tensor] = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``
    (``torch.nn.functional.bilinear``)."""
    if input1.dim() != input2.dim():
        raise RuntimeError("bilinear(): input dimensions do not match: got "
                           f"{input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    _check_same_dtype(input1, input2, weight, bias)
    if input1.shape[-1] != weight.size(1):
        raise RuntimeError("bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.size(2):
        raise RuntimeError("bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and bias.size(0) != weight.shape[0]:
        raise RuntimeError("bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0]} but expected {weight.shape[0]}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, got {weight.dim()}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out = _trilinear(x1, weight, x2)
    out = out.view(*lead, weight.shape[0])
    if bias is not None:
        out = out + bias
    return out


# ---------------------------------------------------------------------------- trilinear
# Note [bilinear is one trilinear op]
# PyTorch computes F.bilinear as views of the inputs to 2-d, one ``_trilinear`` op
# (TrilinearBackward0) and a view (and an add for the bias). Here that op is
# ``out[n, o] = sum_ij x1[n, i] w[o, i, j] x2[n, j]``: forward as GEMMs (contracting ``i``
# first, or the per-row outer products against the flattened weight, whichever intermediate is
# smaller); its VJP is three einsums of ndgrad ops (so it is
# differentiable again); its JVP applies the op with each tangent in turn.
def _tri_fwd(x1: np.ndarray, w: np.ndarray, x2: np.ndarray) -> np.ndarray:
    dt = x1.dtype
    if dt.kind == "f" and dt.itemsize < 4 or dt.kind == "V":   # half/bfloat16: float32 math
        x1, w, x2 = (a.astype(np.float32) for a in (x1, w, x2))
    n, o, i, j = x1.shape[0], w.shape[0], w.shape[1], w.shape[2]
    if o < i:       # contract i first: an (n, o, j) intermediate
        t = (x1 @ w.transpose(1, 0, 2).reshape(i, o * j)).reshape(n, o, j)
        out = (t @ x2[:, :, None])[..., 0]
    else:           # per-row outer products (n, i * j) times the flattened weight
        outer = (x1[:, :, None] * x2[:, None, :]).reshape(n, i * j)
        out = outer @ w.reshape(o, i * j).T
    return out.reshape(n, o).astype(dt, copy=False)


def _tri_vjp(ctx, g):
    x1, w, x2 = ctx.saved
    e = _products.einsum
    return (e("no,oij,nj->ni", g, w, x2) if ctx.needs_input_grad(0) else None,
            e("no,ni,nj->oij", g, x1, x2) if ctx.needs_input_grad(1) else None,
            e("no,oij,ni->nj", g, w, x1) if ctx.needs_input_grad(2) else None)


def _tri_jvp(ctx, t1, tw, t2):
    x1, w, x2 = ctx.inputs
    out = None
    for a, b, c in ((t1, w, x2), (x1, tw, x2), (x1, w, t2)):
        if a is None or b is None or c is None:
            continue
        r = _trilinear(a, b, c)
        out = r if out is None else out + r
    return out


TRILINEAR = Op("_trilinear", "TrilinearBackward0", _tri_fwd, _tri_vjp,
               saves=("i1", "i2", "i3"), inputs=("i1", "i2", "i3"), jvp=_tri_jvp)


def _trilinear(x1: Tensor, w: Tensor, x2: Tensor) -> Tensor:
    if x1._blevel or w._blevel or x2._blevel:  # Note [Batched backward]
        r = _bcall(_trilinear, x1, w, x2)
        if r is not NotImplemented:
            return r
    return apply(TRILINEAR, (x1, w, x2), (x1._data, w._data, x2._data))


def _tri_rule(c, args):
    specs = [("z" if b else "") + s for b, s in zip(c.bd, ("ni", "oij", "nj"))]
    return _products.einsum(f"{specs[0]},{specs[1]},{specs[2]}->zno", *c.ts)


def _install_batching() -> None:
    from ._batching import RULES
    RULES[TRILINEAR] = _tri_rule


_install_batching()


def _check_same_dtype(input1: Tensor, input2: Tensor, weight: Tensor,
                      bias: Optional[Tensor]) -> None:
    ts = [("input1", input1), ("input2", input2), ("weight", weight)]
    if bias is not None:
        ts.append(("bias", bias))
    if len({t._data.dtype for _, t in ts}) > 1:
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{n}: {_c_name(_FROM_NP[t._data.dtype])}" for n, t in ts))


# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = """
linear(Tensor input, Tensor weight, Tensor? bias=None)
bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None)
"""
