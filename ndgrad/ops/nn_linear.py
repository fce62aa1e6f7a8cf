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

from ..tensor import Tensor
from . import products as _products
from . import rearrange as _rearrange  # noqa: F401  (Tensor.view/reshape are installed)

__all__ = ["linear", "bilinear"]


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``input @ weight.T + bias`` (``torch.nn.functional.linear``)."""
    if input.dim() == 0:
        # matmul's error, as PyTorch's
        return input.matmul(weight.t())
    wt = weight.t()
    if bias is not None:
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
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, got {weight.dim()}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError("bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError("bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError("bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[-1] if bias.dim() else 1} but expected "
                           f"{weight.shape[0]}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out = _products.einsum("bi,oij,bj->bo", x1, weight, x2)
    out = out.view(*lead, weight.shape[0])
    if bias is not None:
        out = out + bias
    return out


# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = """
linear(Tensor input, Tensor weight, Tensor? bias=None)
bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None)
"""
