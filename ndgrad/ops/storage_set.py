"""``Tensor.as_subclass`` (an alias of the tensor as another Tensor class) and ``Tensor.set_``
(make a tensor look at another tensor's memory), with PyTorch's autograd behaviour and errors.

Example:
    >>> import ndgrad
    >>> a, b = ndgrad.zeros(3), ndgrad.arange(6.0).reshape(2, 3)
    >>> a.set_(b).shape, a.data_ptr() == b.data_ptr()
    (ndgrad.Size([2, 3]), True)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .. import _dtype
from ..autograd.grad_mode import _state
from ..tensor import Tensor, _new, _storage_nbytes, _storage_root
from ._dispatch import Op, apply
from ._jvp import FW_STATE, linear, not_implemented
from .shape import _storage_view
from .views_inplace import _bump, _check_inplace

__all__ = ["as_subclass", "set_"]

# ``as_subclass``'s result: a view of its input (PyTorch's ``alias``).
ALIAS = Op("alias", "AliasBackward0", lambda x: x.view(), lambda ctx, g: g, view=True,
           jvp=linear)


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """``self`` as an instance of ``cls`` (a subclass of Tensor), sharing its data and its
    autograd history (an ``AliasBackward0`` node when ``self`` requires grad); ``cls``'s
    ``__init__`` is not called.

    >>> import ndgrad
    >>> class Tagged(ndgrad.Tensor):
    ...     pass
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> t = x.as_subclass(Tagged)
    >>> type(t).__name__, t.grad_fn.name()
    ('Tagged', 'AliasBackward0')
    """
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    out = apply(ALIAS, (self,), (self._data,))
    if self._requires_grad and out._grad_fn is None and out._base is not None:
        # PyTorch's alias under no_grad still requires grad (a leaf, as a Parameter would be)
        out._requires_grad = True
    if cls is not Tensor:
        out.__class__ = cls
    return out


# ---------------------------------------------------------------------------- set_
def _not_implemented(ctx: Any, g: Tensor) -> Any:
    raise RuntimeError("derivative for set_ is not implemented")


# The node ``set_`` records when it runs with grad recorded (PyTorch has no derivative).
_SET_JVP = not_implemented("set_")
SET_ = Op("set_", "NotImplemented", lambda s, src: src, _not_implemented,
          inputs=("self", "source"), full_name="torch::autograd::NotImplemented", jvp=_SET_JVP)

_OVERLOADS = (
    " * ()\n"
    " * (torch.Storage source)\n"
    " * (torch.Storage source, int storage_offset, tuple of ints size, tuple of ints stride = "
    "None)\n"
    " * (Tensor source)\n"
    " * (Tensor source, int storage_offset, tuple of ints size, tuple of ints stride = None)\n")


def _type_word(v: Any) -> str:
    return "Tensor" if isinstance(v, Tensor) else type(v).__name__


def _invalid(args: tuple, kwargs: dict) -> TypeError:
    got = [_type_word(a) for a in args] + [f"{k}={_type_word(v)}" for k, v in kwargs.items()]
    listed = ", ".join(got) + (", " if kwargs else "")
    return TypeError("set_() received an invalid combination of arguments - got "
                     f"({listed}), but expected one of:\n{_OVERLOADS}")


def _ints(v: Any) -> Optional[tuple]:
    if isinstance(v, Tensor) or not isinstance(v, (tuple, list)):
        return None
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in v):
        return None
    return tuple(int(n) for n in v)


def _parse(args: tuple, kwargs: dict) -> tuple:
    """(source, storage_offset, size, stride) of one of ``set_``'s Tensor overloads."""
    names = ("source", "storage_offset", "size", "stride")
    if len(args) > 4 or any(k not in names for k in kwargs):
        raise _invalid(args, kwargs)
    vals: dict = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in vals:
            raise _invalid(args, kwargs)
        vals[k] = v
    if not vals:
        return None, None, None, None
    source = vals.get("source")
    if not isinstance(source, Tensor) and _storage_bytes(source) is None:
        raise _invalid(args, kwargs)
    if len(vals) == 1:
        return source, None, None, None
    offset, size = vals.get("storage_offset"), vals.get("size")
    stride = vals.get("stride")
    if (not isinstance(offset, (int, np.integer)) or isinstance(offset, bool)
            or _ints(size) is None or (stride is not None and _ints(stride) is None)):
        raise _invalid(args, kwargs)
    return source, int(offset), _ints(size), None if stride is None else _ints(stride)


def _storage_bytes(source: Any) -> Optional[np.ndarray]:
    """The bytes of an ``UntypedStorage``/``TypedStorage`` (ndgrad/storage.py: windows onto a
    storage root, known here by their attributes), or None for anything else."""
    if hasattr(source, "_untyped"):
        source = source._untyped
    b = getattr(source, "_bytes", None)
    return b if isinstance(b, np.ndarray) and b.dtype == np.uint8 else None


def _storage_tensor(source: Any, dt: np.dtype) -> Tensor:
    """A 1-D tensor of dtype ``dt`` over the whole of storage ``source`` (``set_(storage)``)."""
    typed = getattr(source, "_np", None)
    if typed is not None and np.dtype(typed) != dt:
        names = _dtype._C_NAMES
        want = _dtype._FROM_NP[dt].name
        got = _dtype._FROM_NP[np.dtype(typed)].name
        raise RuntimeError(f"Expected a Storage of type {names.get(want, want)} or an "
                           f"UntypedStorage, but got type {names.get(got, got).capitalize()} "
                           f"for argument 1 'storage'")
    b = _storage_bytes(source)
    assert b is not None
    n = b.size // dt.itemsize
    out = _new(Tensor)
    out._data = b[:n * dt.itemsize].view(dt)
    return out


def _contiguous_strides(size: Sequence[int]) -> tuple:
    out, acc = [], 1
    for n in reversed(size):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _source_array(source: Tensor, offset: int, size: tuple, stride: Optional[tuple]
                  ) -> np.ndarray:
    """``size``/``stride`` over ``source``'s storage, ``offset`` elements past where
    ``source`` starts (PyTorch's Tensor overload)."""
    x = source._data
    if stride is None:
        stride = _contiguous_strides(size)
    if len(stride) != len(size):
        raise RuntimeError("mismatch in length of strides and shape")
    total = source.storage_offset() + offset
    if total < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {total}")
    item = x.itemsize
    nbytes = _storage_nbytes(_storage_root(x))
    need = 0 if 0 in size else (total + 1 + sum((n - 1) * s for n, s in zip(size, stride)))
    if need * item > nbytes:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {total}, "
            f"and itemsize {item} requiring a storage size of {need * item} are out of bounds "
            f"for storage of size {nbytes}")
    return _storage_view(x, size, stride, total)


def set_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Make ``self`` look at ``source``'s memory with its shape and strides (or, with
    ``storage_offset``, ``size`` and ``stride``, at that window of ``source``'s storage,
    counted from where ``source`` starts); with no argument, an empty tensor. Writes through
    either are seen by the other. ``self``'s version moves; ``source``'s does not. ``source``
    may be a storage (``t.untyped_storage()``, ``t.storage()``): all of it, as a 1-D tensor in
    ``self``'s dtype, offsets counted from its start.

    >>> import ndgrad
    >>> a, b = ndgrad.zeros(1), ndgrad.arange(6.0)
    >>> a.set_(b, 1, (2,), (2,))
    tensor([1., 3.])
    """
    source, offset, size, stride = _parse(args, kwargs)
    if source is not None and not isinstance(source, Tensor):     # a storage
        source = _storage_tensor(source, self._data.dtype)
    if source is not None and source._data.dtype != self._data.dtype:
        names = _dtype._C_NAMES
        raise RuntimeError(
            f"Could not set tensor of type {_dtype_c(source)} to a tensor of type "
            f"{names.get(self.dtype.name, self.dtype.name)}")
    if source is not None and source._fw_grads and FW_STATE.enabled:
        _SET_JVP(None)               # a dual source: PyTorch has no forward AD rule either
    src_grad = source is not None and source.requires_grad
    recording = _state.enabled and (self.requires_grad or src_grad)
    _check_inplace(self, recording, writes=False)
    if source is None:
        new = np.empty((0,), dtype=self._data.dtype)
    elif offset is None:
        new = source._data
    else:
        new = _source_array(source, offset, size, stride)
    node_res = None
    if recording and (src_grad or self._grad_fn is not None):
        old = _new(Tensor)
        old._data = self._data
        old._grad_fn, old._output_nr = self._grad_fn, self._output_nr
        old._requires_grad = self._requires_grad
        src = source if source is not None else old
        node_res = apply(SET_, (old, src), (self._data, src._data))
    self._data = new
    # a view no longer: its data is not its base's any more (PyTorch keeps the link)
    self._base = None
    self._view_steps = ()
    self._view_creation = None
    _bump(self)
    if node_res is not None:
        self._grad_fn, self._output_nr = node_res._grad_fn, node_res._output_nr
        self._requires_grad = True
    return self


def _dtype_c(t: Tensor) -> str:
    """PyTorch's C++ name of ``t``'s dtype as ``set_`` words it (``long int``)."""
    return {"int64": "long int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char"}.get(t.dtype.name,
                                           _dtype._C_NAMES.get(t.dtype.name, t.dtype.name))
