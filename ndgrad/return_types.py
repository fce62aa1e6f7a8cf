"""Named tuples of the ops that return several tensors (``torch.return_types``).

Each is a ``namedtuple`` with PyTorch's type and field names: ``sort(values=..., indices=...)``
unpacks, indexes and compares like a tuple.

Example:
    >>> import ndgrad
    >>> r = ndgrad.tensor([3.0, 1.0, 2.0]).sort()
    >>> type(r).__name__, r.indices
    ('sort', tensor([1, 2, 0]))
    >>> values, indices = r
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin",
           "aminmax", "max", "min"]


def _make(name: str, fields: tuple = ("values", "indices")) -> type:
    t = namedtuple(name, fields)  # type: ignore[misc]  # one class per op, named as PyTorch's
    t.__module__ = __name__
    t.__qualname__ = name
    return t


sort = _make("sort")
topk = _make("topk")
kthvalue = _make("kthvalue")
median = _make("median")
nanmedian = _make("nanmedian")
mode = _make("mode")
cummax = _make("cummax")
cummin = _make("cummin")
aminmax = _make("aminmax", ("min", "max"))
max = _make("max")  # noqa: A001  (for max(dim)/min(dim), which return values_indices today)
min = _make("min")  # noqa: A001
