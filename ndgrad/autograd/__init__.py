"""``ndgrad.autograd``: reverse-mode automatic differentiation with PyTorch's semantics.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.autograd.grad((x * x).sum(), x)
    (tensor([2., 4.]),)
"""

from . import graph  # noqa: F401
from .api import backward, grad  # noqa: F401
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .node import Node  # noqa: F401

__all__ = ["backward", "grad", "graph", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "Node"]
