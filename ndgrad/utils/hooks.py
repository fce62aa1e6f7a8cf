"""``torch.utils.hooks``: the handle every ``register_*hook`` returns.

Example:
    >>> import ndgrad
    >>> from ndgrad.utils.hooks import RemovableHandle
    >>> h = ndgrad.ones(1, requires_grad=True).register_hook(lambda g: g)
    >>> isinstance(h, RemovableHandle)
    True
"""

from ..autograd.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
