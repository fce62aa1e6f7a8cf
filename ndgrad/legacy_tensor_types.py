"""PyTorch's legacy tensor types and constructors, which old programs still use:
``ndgrad.FloatTensor(2, 3)``, ``ndgrad.LongTensor([1, 2])``, ``ndgrad.Tensor(2, 3)``,
``isinstance(t, ndgrad.FloatTensor)``, ``t.type(ndgrad.DoubleTensor)``, and the element-wise
Python callbacks ``Tensor.apply_``/``map_``/``map2_``.

A legacy type is not a class of tensors (every tensor is a ``Tensor``): it is a dtype with a
constructor, and ``isinstance`` asks for that dtype (of a dense CPU tensor), as in PyTorch.

Example:
    >>> import ndgrad
    >>> ndgrad.FloatTensor([1, 2])
    tensor([1., 2.])
    >>> ndgrad.LongTensor(2, 3).shape
    ndgrad.Size([2, 3])
    >>> isinstance(ndgrad.ones(2), ndgrad.FloatTensor), ndgrad.ones(2).type()
    (True, 'torch.FloatTensor')
    >>> ndgrad.tensor([1.5, -2.0]).type(ndgrad.LongTensor)
    tensor([ 1, -2])
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

import warnings
from importlib import import_module

from . import _creation, _dtype
from . import cuda as _cuda
from .tensor import Size, Tensor, _wrap, check_device

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
           "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
           "tensor_init", "legacy_dtype", "Variable", "set_default_tensor_type", "apply_",
           "map_", "map2_"]

# dtype -> its C++ name in PyTorch's TensorOptions messages
_CPP_NAMES = {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
    "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
    "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>"}

_OVERLOADS = (" * (*, torch.device device = None)\n * (torch.Storage storage)\n"
              " * (Tensor other)\n * (tuple of ints size, *, torch.device device = None)\n"
              " * (object data, *, torch.device device = None)\n")


def _options(d: _dtype.dtype) -> str:
    return (f"TensorOptions(dtype={_CPP_NAMES[d.name]}, device=cpu, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


def _type_word(v: Any) -> str:
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, _dtype.dtype):
        return "torch.dtype"
    return type(v).__name__


def _bad_combination(args: tuple, kwargs: dict) -> TypeError:
    got = ", ".join([_type_word(a) for a in args] +
                    [f"{k}={_type_word(v)}" for k, v in kwargs.items()])
    if kwargs and not args:
        got += ", "
    return TypeError(f"new() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n{_OVERLOADS}")


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _uninitialized(shape: tuple, d: _dtype.dtype) -> Tensor:
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                               f"{list(shape)}")
    return _wrap(np.empty(shape, dtype=d.np))


def _new(d: Optional[_dtype.dtype], args: tuple, kwargs: dict) -> Tensor:
    """PyTorch's legacy constructor for dtype ``d`` (None: ``Tensor(...)``, the default dtype,
    and a tensor argument of any dtype)."""
    for k in kwargs:
        if k != "device":
            raise _bad_combination(args, kwargs)
    if "device" in kwargs and kwargs["device"] is not None:
        dev = kwargs["device"]
        kind = str(getattr(dev, "type", dev)).split(":")[0]
        if kind != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                               f"{kind} was passed")
        check_device(dev)
    target = d if d is not None else _dtype.get_default_dtype()
    if not args:
        return _wrap(np.empty((0,), dtype=target.np))
    if len(args) == 1:
        a = args[0]
        if isinstance(a, Tensor):
            if "device" in kwargs:
                raise RuntimeError("Legacy tensor constructor of the form torch.Tensor(tensor, "
                                   "device=device) is not supported.  Use torch.tensor(...) or "
                                   "torch.as_tensor(...) instead.")
            if d is not None and a.dtype != d:
                raise TypeError(f"expected {_options(d)} (got {_options(a.dtype)})")
            return a.view_as(a)             # an alias sharing data and version, as PyTorch's
        if isinstance(a, Size):
            return _uninitialized(tuple(a), target)
        if _is_int(a):
            return _uninitialized((int(a),), target)
        if isinstance(a, str):
            raise TypeError("new(): invalid data type 'str'")
        if a is None or isinstance(a, (bool, float, complex, np.bool_, np.floating,
                                       np.complexfloating)):
            raise TypeError(f"new(): data must be a sequence (got {type(a).__name__})")
        if isinstance(a, np.ndarray):
            if a.ndim == 0:
                raise TypeError(f"new(): data must be a sequence (got {type(a).__name__})")
            _creation._check_shareable(a)   # read in place as torch's: its read-only warning
        return _creation.tensor(a, dtype=target)    # torch.tensor's element conversion
    if all(_is_int(a) for a in args):
        return _uninitialized(tuple(int(a) for a in args), target)
    if any(isinstance(a, (list, tuple, Tensor, np.ndarray)) for a in args):
        raise _bad_combination(args, kwargs)
    for pos, a in enumerate(args, 1):
        if not _is_int(a):
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {pos} "
                            f"with error \"type must be tuple of ints,but got "
                            f"{type(a).__name__}\"")
    raise _bad_combination(args, kwargs)        # (unreachable: every non-int is reported)


def tensor_init(self: Tensor, *args: Any, **kwargs: Any) -> None:
    """``ndgrad.Tensor(...)``: PyTorch's legacy constructor (sizes, data, a tensor to alias,
    nothing) in the default dtype."""
    t = _new(None, args, kwargs)
    self.__dict__.update(t.__dict__)


_tensor_module: Any = import_module("ndgrad.tensor")    # ndgrad.tensor is also a function
_tensor_module._legacy_init = tensor_init


class _LegacyType(type):
    """The metaclass of the legacy types: ``isinstance`` by dtype, calling constructs."""

    dtype: _dtype.dtype
    is_cuda = False
    is_sparse = False

    def __instancecheck__(cls, obj: Any) -> bool:
        return (not cls.is_cuda and isinstance(obj, Tensor)
                and not getattr(obj, "is_sparse", False) and obj._data.dtype == cls.dtype.np)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return sub is cls

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls.is_cuda:
            raise TypeError(f"type torch.cuda.{cls.__name__} not available. Torch not compiled "
                            "with CUDA enabled.")
        return _new(cls.dtype, args, kwargs)

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _legacy(name: str, d: _dtype.dtype, cuda: bool = False) -> _LegacyType:
    doc = (f"Legacy constructor of ``{d.name}`` tensors (``{name}(2, 3)`` uninitialized, "
           f"``{name}([1, 2])`` from data); ``isinstance(t, {name})`` is ``t.dtype == "
           f"ndgrad.{d.name}``.")
    if cuda:
        doc = f"``torch.cuda.{name}``: no tensor is one; calling it raises (no CUDA)."
    return _LegacyType(name, (), {"dtype": d, "__module__": "ndgrad.cuda" if cuda else "ndgrad",
                                  "__qualname__": name, "__doc__": doc, "is_cuda": cuda})


FloatTensor = _legacy("FloatTensor", _dtype.float32)
DoubleTensor = _legacy("DoubleTensor", _dtype.float64)
HalfTensor = _legacy("HalfTensor", _dtype.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", _dtype.bfloat16)
ByteTensor = _legacy("ByteTensor", _dtype.uint8)
CharTensor = _legacy("CharTensor", _dtype.int8)
ShortTensor = _legacy("ShortTensor", _dtype.int16)
IntTensor = _legacy("IntTensor", _dtype.int32)
LongTensor = _legacy("LongTensor", _dtype.int64)
BoolTensor = _legacy("BoolTensor", _dtype.bool)


_TYPES = (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, ByteTensor, CharTensor,
          ShortTensor, IntTensor, LongTensor, BoolTensor)
_BY_NAME = {t.__name__: t for t in _TYPES}
_CUDA_BY_NAME = {t.__name__: _legacy(t.__name__, t.dtype, cuda=True) for t in _TYPES}
for _name, _t in _CUDA_BY_NAME.items():  # ndgrad.cuda.FloatTensor ...: named by old code
    setattr(_cuda, _name, _t)


def set_default_tensor_type(t: Any) -> None:
    """Deprecated in PyTorch (use ``set_default_dtype``): make the floating legacy type ``t``
    (or its name, ``'torch.DoubleTensor'``) the default.

    >>> import ndgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     ndgrad.set_default_tensor_type(ndgrad.DoubleTensor)
    >>> ndgrad.tensor([1.0]).dtype
    ndgrad.float64
    >>> ndgrad.set_default_dtype(ndgrad.float32)
    """
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        mod, _, name = t.rpartition(".")
        if mod not in ("torch", "ndgrad", "torch.cuda", "ndgrad.cuda"):
            raise ModuleNotFoundError(f"No module named '{t.split('.')[0]}'")
        typ = (_CUDA_BY_NAME if mod.endswith("cuda") else _BY_NAME).get(name)
        if typ is None:
            raise AttributeError(f"module '{mod}' has no attribute '{name}'")
        t = typ
        invalid = "only floating-point types are supported as the default type"
    else:
        invalid = "invalid type object: only floating-point types are supported as the default type"
    if not isinstance(t, _LegacyType):
        raise TypeError(invalid)
    if t.is_cuda:
        raise TypeError(f"type torch.cuda.{t.__name__} not available. Torch not compiled with "
                        "CUDA enabled.")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dtype.set_default_dtype(t.dtype)


def legacy_dtype(t: Any) -> Optional[_dtype.dtype]:
    """The dtype a legacy type (or ``Tensor``: the default dtype) stands for, else None
    (``Tensor.type(ndgrad.DoubleTensor)``)."""
    if isinstance(t, _LegacyType):
        if t.is_cuda:
            raise RuntimeError("Cannot initialize CUDA: ndgrad has no CUDA backend")
        return t.dtype
    if t is Tensor:
        return _dtype.get_default_dtype()
    return None


class _VariableType(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False
                 ) -> Any:
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            data = _wrap(np.empty((0,), dtype=_dtype.get_default_dtype().np))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(bool(requires_grad))


class Variable(metaclass=_VariableType):
    """``ndgrad.autograd.Variable(t, requires_grad=False)``: PyTorch 0.3's wrapper, now a
    detached alias of ``t`` (a leaf) that requires grad as asked; every tensor is a Variable.

    >>> import ndgrad
    >>> from ndgrad.autograd import Variable
    >>> v = Variable(ndgrad.ones(2), requires_grad=True)
    >>> v.requires_grad, v.is_leaf, isinstance(ndgrad.ones(1), Variable)
    (True, True, True)
    """


# ---------------------------------------------------------------------------- apply_ / map_
def _refuse_grad(name: str, *ts: Tensor) -> None:
    if any(t.requires_grad for t in ts):
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")


def _converter(d: _dtype.dtype) -> Callable[[Any], Any]:
    """The callback's result as an element of ``d``, with PyTorch's checks."""
    if d.is_complex:
        return complex
    if d.is_floating_point:
        def real(v: Any) -> float:
            if isinstance(v, (complex, np.complexfloating)) or not _is_number(v):
                raise TypeError(f"must be real number, not {type(v).__name__}")
            return float(v)
        return real
    if d == _dtype.bool:
        def boolean(v: Any) -> bool:
            if not _is_number(v):
                raise TypeError(f"must be real number, not {type(v).__name__}")
            return bool(v)
        return boolean
    info = np.iinfo(d.np)

    def integer(v: Any) -> int:
        if isinstance(v, (complex, np.complexfloating)) or not _is_number(v):
            raise TypeError(f"must be real number, not {type(v).__name__}")
        f = float(v)
        if not np.isfinite(f) or not info.min <= int(f) <= info.max:
            raise RuntimeError(f"value cannot be converted to type {d.name} without overflow")
        return int(v) if _is_int(v) else int(f)
    return integer


def _is_number(v: Any) -> bool:
    if isinstance(v, Tensor):
        return v.numel() == 1
    return isinstance(v, (int, float, complex, np.number, np.bool_))


def _as_python(v: Any) -> Any:
    return v.item() if isinstance(v, Tensor) else v


def _store(self: Tensor, values: list) -> Tensor:
    """Write the results (all computed first: an exception in the callback writes nothing)."""
    if not self._data.flags.writeable:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")
    conv = _converter(self.dtype)
    out = np.array([conv(_as_python(v)) for v in values], dtype=self._data.dtype)
    self._data[...] = out.reshape(self._data.shape)
    return self


def _check_args(name: str, args: tuple, kwargs: dict, n: int) -> None:
    if kwargs:
        raise TypeError(f"TensorBase.{name}() takes no keyword arguments")
    if len(args) != n:
        word = "exactly one argument" if n == 1 else f"exactly {n} arguments"
        raise TypeError(f"TensorBase.{name}() takes {word} ({len(args)} given)")


def _others(name: str, self: Tensor, others: tuple) -> list:
    out = []
    for pos, o in enumerate(others, 1):
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}(): argument '{'other' if pos == 1 else f'tensor{pos}'}' "
                            f"(position {pos}) must be Tensor, not {type(o).__name__}")
        if o.dtype != self.dtype:
            raise TypeError(f"{name}: expected {self.type()} for "
                            f"'{'other' if pos == 1 else f'tensor{pos}'}' (got {o.type()})")
        out.append(o)
    _refuse_grad(name, self, *out)
    return [o.detach().expand(self.shape)._data.reshape(-1).tolist() for o in out]


def new(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``self.new(...)``: the legacy constructor in ``self``'s dtype (sizes give an
    uninitialized tensor, data is converted, a tensor of the same dtype is aliased, nothing
    gives an empty one), as PyTorch's.

    >>> import ndgrad
    >>> x = ndgrad.zeros(2, dtype=ndgrad.float64)
    >>> x.new([1, 2]), x.new(3).shape, x.new().shape
    (tensor([1., 2.], dtype=ndgrad.float64), ndgrad.Size([3]), ndgrad.Size([0]))
    """
    return _new(self.dtype, args, kwargs)


def apply_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Replace each element ``v`` by ``callable(v)`` (a Python function, called in order, on
    Python numbers). Slow; refused on a tensor that requires grad; does not count as a
    modification for autograd (the version counter is unchanged), as in PyTorch.

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 2.0]).apply_(lambda v: v * 10)
    tensor([10., 20.])
    """
    _check_args("apply_", args, kwargs, 1)
    fn = args[0]
    _refuse_grad("apply_", self)
    return _store(self, [fn(v) for v in self._data.reshape(-1).tolist()])


def map_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Replace each element ``a`` by ``callable(a, b)`` with ``b`` the matching element of
    ``tensor`` (broadcast to this tensor's shape, same dtype).

    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 2.0]).map_(ndgrad.tensor([10.0, 20.0]), lambda a, b: a + b)
    tensor([11., 22.])
    """
    _check_args("map_", args, kwargs, 2)
    (other,) = _others("map_", self, args[:1])
    fn = args[1]
    return _store(self, [fn(a, b) for a, b in zip(self._data.reshape(-1).tolist(), other)])


def map2_(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``map_`` with two tensors: each element ``a`` becomes ``callable(a, b, c)``.

    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0])
    >>> x.map2_(x.clone(), ndgrad.tensor([1.0, 1.0]), lambda a, b, c: a * b + c)
    tensor([2., 5.])
    """
    _check_args("map2_", args, kwargs, 3)
    b, c = _others("map2_", self, args[:2])
    fn = args[2]
    return _store(self, [fn(x, y, z) for x, y, z in zip(self._data.reshape(-1).tolist(), b, c)])

