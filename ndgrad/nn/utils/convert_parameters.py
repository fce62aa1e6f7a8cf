"""``parameters_to_vector`` and ``vector_to_parameters``, as in
``torch.nn.utils.convert_parameters``.

    >>> import ndgrad
    >>> from ndgrad.nn.utils import parameters_to_vector, vector_to_parameters
    >>> m = ndgrad.nn.Linear(2, 1)
    >>> v = parameters_to_vector(m.parameters())
    >>> v.shape
    ndgrad.Size([3])
    >>> vector_to_parameters(ndgrad.arange(3.0), m.parameters())
    >>> m.bias
    Parameter containing:
    tensor([2.], requires_grad=True)
"""

from __future__ import annotations

from typing import Iterable

from ... import cat
from ...tensor import Tensor, typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable)."""
    vec = []
    for param in parameters:
        _ = param.device   # torch checks devices first: a None (an unset .grad) fails here
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make consecutive slices of ``vec`` the data of ``parameters`` (they share ``vec``'s
    memory afterwards, as in PyTorch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param
