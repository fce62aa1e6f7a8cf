"""``default_collate`` and ``default_convert``: how a ``DataLoader`` turns a list of samples
into a batch, with torch's rules.

Example:
    >>> import ndgrad
    >>> from ndgrad.utils.data import default_collate
    >>> default_collate([(ndgrad.tensor([1.0, 2.0]), 0), (ndgrad.tensor([3.0, 4.0]), 1)])
    [tensor([[1., 2.],
            [3., 4.]]), tensor([0, 1])]
"""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Type, Union

import numpy as np

from ... import _creation, _dtype
from ...ops import stack
from ...tensor import Tensor

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")
_STRING_KINDS = re.compile(r"[SaUO]")


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data: Any) -> Any:
    """NumPy arrays and scalars in ``data`` (recursively through mappings, namedtuples and
    sequences) become tensors; everything else is returned as is."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if isinstance(data, np.ndarray) and _STRING_KINDS.search(data.dtype.str):
            return data
        if isinstance(data, (np.str_, np.bytes_)):
            return data
        return _creation.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            mapping_cls: Any = type(data)
            return mapping_cls({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            sequence_cls: Any = type(data)
            return sequence_cls([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def _collate_tensor(batch: Sequence[Tensor], **kw: Any) -> Tensor:
    return stack(list(batch), 0)


def _collate_ndarray(batch: Sequence[np.ndarray], **kw: Any) -> Tensor:
    if _STRING_KINDS.search(batch[0].dtype.str):
        raise TypeError(_ERR.format(batch[0].dtype))
    return collate([_creation.as_tensor(b) for b in batch], collate_fn_map=kw.get(
        "collate_fn_map"))


def _collate_numpy_scalar(batch: Sequence[Any], **kw: Any) -> Tensor:
    return _creation.as_tensor(np.array(batch))


def _collate_float(batch: Sequence[float], **kw: Any) -> Tensor:
    return _creation.tensor(list(batch), dtype=_dtype.float64)


def _collate_int(batch: Sequence[int], **kw: Any) -> Tensor:
    return _creation.tensor(list(batch))


def _collate_str(batch: Sequence[Any], **kw: Any) -> Sequence[Any]:
    return batch


default_collate_fn_map: Dict[Union[Type, Tuple[Type, ...]], Callable] = {
    Tensor: _collate_tensor,
    np.ndarray: _collate_ndarray,
    (np.bool_, np.number, np.object_): _collate_numpy_scalar,
    float: _collate_float,
    int: _collate_int,
    str: _collate_str,
    bytes: _collate_str,
}


def collate(batch: Sequence[Any], *,
            collate_fn_map: Optional[Dict[Union[Type, Tuple[Type, ...]], Callable]] = None
            ) -> Any:
    """Collate with ``collate_fn_map`` (type -> function) for the leaves, recursing through
    mappings, namedtuples and sequences as ``default_collate`` does."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for t, fn in collate_fn_map.items():
            if isinstance(elem, t):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        fields = {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map)
                  for k in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)      # keeps the mapping's type and attributes
            out.update(fields)
            return out
        try:
            return elem_type(fields)
        except TypeError:
            return fields
    if _is_namedtuple(elem):
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map)
                           for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns
        try:
            return elem_type(columns)
        except TypeError:
            return columns
    raise TypeError(_ERR.format(elem_type))


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack tensors, NumPy arrays and numbers of a list of samples into batch tensors,
    recursing through dicts, namedtuples, tuples and lists (a tuple of fields becomes a list
    of batched fields; float -> float64, int -> int64; strings stay lists), as torch's."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
