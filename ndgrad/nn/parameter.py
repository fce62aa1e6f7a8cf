"""``Parameter``, ``Buffer`` and the uninitialized placeholders of lazy modules, as in
``torch.nn.parameter``.

A ``Parameter`` is a Tensor subclass sharing its data with the tensor it was made from, with
``requires_grad=True`` by default. Assigning one as a ``Module`` attribute registers it. Ops on a
parameter return plain tensors (every op builds its result as a ``Tensor``), as in PyTorch.

    >>> import ndgrad
    >>> from ndgrad.nn import Parameter
    >>> Parameter(ndgrad.ones(2))
    Parameter containing:
    tensor([1., 1.], requires_grad=True)
    >>> type(Parameter(ndgrad.ones(2)) * 2).__name__
    'Tensor'
"""

from __future__ import annotations

from typing import Any, Optional, SupportsIndex

from .. import _creation
from .. import _dtype
from .._C import _disabled_torch_function_impl
from ..tensor import Tensor

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer"]

_new = object.__new__


def _share(cls: type, data: Tensor) -> Any:
    """A new instance of ``cls`` sharing ``data``'s array and version counter, without history
    (PyTorch's ``_make_subclass``)."""
    t: Any = _new(cls)
    t._data = data._data
    if data._tborn:             # the same storage: a func transform's own or not as data's
        t._tborn = data._tborn
    if not data._inference:
        t._version_counter = data._vc()
    return t


class Parameter(Tensor):
    """A tensor that is a module parameter (``torch.nn.Parameter``).

    ``Parameter(data=None, requires_grad=True)``: shares ``data``'s memory (an empty tensor
    when ``data`` is None).
    """

    __torch_function__ = _disabled_torch_function_impl   # ops return plain tensors

    def __new__(cls, data: Optional[Tensor] = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = _creation.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        if isinstance(data, UninitializedTensorMixin):
            raise RuntimeError("Can't create a Parameter from an uninitialized tensor")
        p = _share(cls, data)
        if requires_grad:
            if not (_dtype._FROM_NP[data._data.dtype]._category >= _dtype._FLOAT):
                raise RuntimeError("Only Tensors of floating point and complex dtype can "
                                   "require gradients")
            p._requires_grad = True
        return p

    def __init__(self, data: Optional[Tensor] = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> "Parameter":
        if id(self) in memo:
            return memo[id(self)]
        data = Tensor.__deepcopy__(_share(Tensor, self), {})
        result = type(self)(data, self._requires_grad)   # the grad is not copied (PyTorch)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple:
        return (_rebuild_parameter, (type(self), self._data, self._requires_grad))


def _rebuild_parameter(cls: type, data: Any, requires_grad: bool) -> Parameter:
    t = Tensor.__new__(Tensor)
    t._data = data
    return cls(t, requires_grad)


class _BufferMeta(type):
    # ``isinstance(t, Buffer)``: a tensor made by ``Buffer(...)`` (marked ``_is_buffer``).
    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor to register as a module buffer by assignment (``torch.nn.Buffer``).

    ``Buffer(data=None, *, persistent=True)`` returns a plain Tensor sharing ``data``'s memory,
    marked so that ``module.name = Buffer(t)`` calls ``register_buffer``.

    >>> import ndgrad
    >>> b = ndgrad.nn.Buffer(ndgrad.zeros(2), persistent=False)
    >>> type(b).__name__, isinstance(b, ndgrad.nn.Buffer), b.persistent
    ('Tensor', True, False)
    """

    __torch_function__ = _disabled_torch_function_impl   # ops return plain tensors

    persistent: bool

    # A plain Tensor flagged as a buffer, as torch's (``isinstance`` is the metaclass's test).
    def __new__(cls, data: Optional[Tensor] = None, *, persistent: bool = True) -> Any:
        if data is None:
            data = _creation.empty(0)
        t = _share(Tensor, data)
        t._requires_grad = data.requires_grad
        t._is_buffer = True
        t.persistent = persistent
        return t


class UninitializedTensorMixin:
    """Methods shared by ``UninitializedParameter`` and ``UninitializedBuffer``: every use of
    the data raises until ``materialize`` gives it a shape."""

    __torch_function__ = _disabled_torch_function_impl   # ops return plain tensors

    cls_to_become: Any = None
    _data: Any           # the Tensor's (this is a mixin of Tensor subclasses)
    _requires_grad: bool

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give the placeholder ``shape`` (uninitialized values) and turn it into
        ``cls_to_become``."""
        if dtype is None:
            dtype = _dtype._FROM_NP[self._data.dtype]
        if isinstance(shape, int):
            shape = (shape,)
        self._data = _creation.empty(tuple(shape), dtype=dtype)._data
        self.__class__ = self.cls_to_become

    def _uninit_error(self) -> RuntimeError:
        return RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    @property
    def shape(self) -> Any:
        raise self._uninit_error()

    def size(self, dim: Any = None) -> Any:
        raise self._uninit_error()

    def numel(self) -> int:
        raise self._uninit_error()

    def dim(self) -> int:
        raise self._uninit_error()

    @property
    def ndim(self) -> int:
        raise self._uninit_error()

    @property
    def dtype(self) -> Any:
        return _dtype._FROM_NP[self._data.dtype]

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple:
        return (self.__class__, (self._requires_grad,))

    def __deepcopy__(self, memo: dict) -> Any:
        cls: Any = type(self)
        result = cls(self._requires_grad)
        memo[id(self)] = result
        return result


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter of unknown shape (lazy modules); ``materialize`` makes it a ``Parameter``."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None,
                dtype: Any = None) -> "UninitializedParameter":
        p = _new(cls)
        p._data = _creation.empty(0, dtype=dtype)._data
        p._requires_grad = bool(requires_grad)
        return p

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of unknown shape (lazy modules); ``materialize`` makes it a ``Tensor``."""

    cls_to_become = Tensor
    persistent: bool

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> "UninitializedBuffer":
        b = _new(cls)
        b._data = _creation.empty(0, dtype=dtype)._data
        b._requires_grad = bool(requires_grad)
        b.persistent = persistent
        return b

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        pass
