"""Tensor methods and operators, bound to the op table.

Note [Tensor methods live beside the op table]
``tensor.py`` holds the Tensor's state and autograd bookkeeping; this module attaches the math
(``x.exp()``, ``x + y``, ``x[i]`` ...) so that ``tensor.py`` does not import the ops it is used
by. Every method here is a one-line forward to ``ndgrad.ops``.
"""

from __future__ import annotations

from typing import Any

import sys

import numpy as np

from . import _creation, _dtype, _layout, _numpy_protocol, _shared_memory, _signature, ops, storage
from ._torch_function import other_operand as _other_operand
from . import legacy_tensor_types as _legacy
from .autograd import api as _autograd_api
from .ops import _autocast
from .ops import views_inplace as _inplace
from .ops._util import broadcast_error, check_tensor, is_scalar, to_tensor
from .tensor import Tensor


# Note [Operator fast paths]
# ``x * y`` and friends are the hottest calls in ndgrad (forward code and every backward rule).
# The common cases (same-dtype tensors; a float tensor with a Python int/float) go straight to
# ``apply``; everything else (promotion, conversion, errors) takes ``pointwise._binary``.
_pw = ops.pointwise
_FAST_FLOATS = frozenset(d.np for d in (_dtype.float16, _dtype.bfloat16, _dtype.float32,
                                        _dtype.float64))
_NP_FLOAT_SCALARS = frozenset((np.float16, np.float32, np.float64))
_MM, _MV = ops.linalg.MM, ops.linalg.MV
_apply = ops.apply


def _fast_binary(tt: Any, ts: Any, name: str, true_div: bool = False):
    def method(self: Tensor, other: Any) -> Tensor:
        t = type(other)
        if t is Tensor:
            ad = self._data
            bd = other._data
            if ad.dtype is bd.dtype and ad.dtype in _FAST_FLOATS:
                try:
                    return _apply(tt, (self, other), (ad, bd))
                except ValueError:
                    pass
        elif t is float or (t is int and -9223372036854775808 <= other < 18446744073709551616):
            ad = self._data
            if ad.dtype in _FAST_FLOATS:
                return _apply(ts, (self,), (ad,), (other,))
        elif t in _NP_FLOAT_SCALARS:
            # a NumPy float scalar counts as a Python number (``_binary`` would take .item())
            ad = self._data
            if ad.dtype in _FAST_FLOATS:
                return _apply(ts, (self,), (ad,), (other.item(),))
        if t is not Tensor and not _operand(other):
            # Note [Operators refuse what PyTorch's refuse]; a tensor-like defining
            # __torch_function__ is handed the call (Note [Torch function protocol])
            return _other_operand(method.__name__, self, other)
        return _pw._binary(self, other, tt, ts, name, true_div)
    method.__name__ = f"__{name}__"
    return method


# Note [Operators refuse what PyTorch's refuse]
# An operator (``x * y``, ``x += y``, ``x == y`` ...) takes a Tensor, a number or an ndarray as
# its other operand; for anything else (a list, a tuple, None, a string) it returns
# NotImplemented as PyTorch's do, so Python raises its TypeError ("unsupported operand
# type(s)"), or compares identities for ``==``/``!=``. Python ints beyond 64 bits raise
# PyTorch's OverflowError. (``x + y`` and friends test it after their fast paths, before any
# dtype rule, so ``bool_tensor - "s"`` is Python's TypeError, not the bool-subtraction error.)
def _operand(other: Any) -> bool:
    t = type(other)
    if t is Tensor or t is float or t is bool:
        return True
    if t is int:
        return _signature._is_number(other)          # OverflowError beyond 64 bits
    # an ndarray is left to NumPy (Note [NumPy protocol] in ndgrad/_numpy_protocol.py)
    return isinstance(other, (Tensor, np.number, np.bool_, complex))


def _operator(fn: Any, name: str):
    """The operator method ``name`` calling ``fn(self, other)`` for the operands it takes."""
    def method(self: Tensor, other: Any) -> Tensor:
        if type(other) is not Tensor and not _operand(other):
            return _other_operand(name, self, other)
        return fn(self, other)
    method.__name__ = name
    return method


def _operand_or_deferring(other: Any) -> bool:
    """An operand of ``==`` and reflected ``/``: PyTorch's operands plus what NumPy leaves to
    the tensor (Note [NumPy protocol])."""
    return type(other) is Tensor or _operand(other) or _numpy_protocol.defers_to_numpy(other)


def _eq_method(self: Tensor, other: Any) -> Tensor:
    # ``==`` is the one operator PyTorch runs itself on an ndarray (Note [NumPy protocol])
    if not _operand_or_deferring(other):
        return _other_operand("__eq__", self, other)
    return ops.eq(self, other)


def _rsub_method(self: Tensor, other: Any) -> Tensor:
    t = type(other)
    if (t is float or t is int) and self._data.dtype in _FAST_FLOATS:
        return _apply(_pw.RSUB_S, (self,), (self._data,), (other, 1))
    if not _operand(other):
        return _other_operand("__rsub__", self, other)
    return ops.rsub(self, other)


def _invert(self: Tensor) -> Tensor:
    if self._data.dtype.kind in "fc":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return ops.bitwise_not(self)


def _rtruediv(self: Tensor, other: Any) -> Tensor:
    if is_scalar(other) or _numpy_protocol.defers_to_numpy(other):
        return ops.reciprocal(self) * other          # PyTorch records MulBackward0 here
    return ops.div(to_tensor(other), self)


def _rtruediv_method(self: Tensor, other: Any) -> Tensor:
    if not _operand_or_deferring(other):
        return _other_operand("__rtruediv__", self, other)
    return _rtruediv(self, other)


def _neg(self: Tensor) -> Tensor:
    return ops.neg(self)


def _pos(self: Tensor) -> Tensor:
    return self


def _abs(self: Tensor) -> Tensor:
    return ops.abs(self)


def _getitem(self: Tensor, index: Any) -> Tensor:
    return ops.getitem(self, index)


def _rpow(self: Tensor, other: Any) -> Tensor:
    if is_scalar(other):
        return ops.pow(other, self)
    return ops.pow(to_tensor(other), self)


def _rmatmul(self: Tensor, other: Any) -> Tensor:
    return NotImplemented          # PyTorch: TypeError "unsupported operand type(s) for @"


def _matmul_op(self: Tensor, other: Any) -> Tensor:
    if type(other) is Tensor and not _autocast.active:  # autocast: matmul's (Note [Autocast])
        # Note [Operator fast paths]: matrix @ matrix/vector of one dtype is what matmul's
        # composite records anyway (mm, mv); its checks are the shape test here.
        a, b = self._data, other._data
        if (a.ndim == 2 and a.dtype is b.dtype and not self._blevel and not other._blevel
                and 1 <= b.ndim <= 2 and a.shape[1] == b.shape[0]):
            return _apply(_MM if b.ndim == 2 else _MV, (self, other), (a, b))
    if not isinstance(other, Tensor):
        # an ndarray: NumPy's matmul (Note [NumPy protocol])
        return _other_operand("__matmul__", self, other)
    return ops.matmul(self, other)


def _tensor_arg_method(fn: Any, name: str, arg: str):
    """The method ``name`` of ``fn(self, other)``: a non-tensor ``other`` gets PyTorch's
    TypeError, which counts arguments after ``self``."""
    def method(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, Tensor):
            check_tensor(other, name, arg, 1)
        return fn(self, other)
    method.__name__ = name
    method.__doc__ = fn.__doc__
    return method


def _setitem(self: Tensor, index: Any, value: Any) -> None:
    _inplace.setitem(self, index, value)


def _binary_inplace_of(fn: Any, ufunc: Any, name: str):
    """``add_``/``sub_``/``mul_``/``div_``: the direct path of ``inplace_binary`` when called
    with just the other operand, the general in-place method otherwise."""
    general = _inplace_of(fn, name)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if len(args) == 1 and not kwargs:
            return _inplace.inplace_binary(self, args[0], ufunc,
                                           lambda a, b: fn(a, b))
        return general(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = general.__doc__
    return method


def _inplace_of(fn: Any, name: str):
    """The in-place method ``name`` (e.g. ``exp_``) of the out-of-place op ``fn``."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        # Tensor arguments are passed through apply_inplace (it checks their requires_grad).
        tensors = [a for a in args if isinstance(a, Tensor)]

        def call(s: Tensor, *ts: Tensor) -> Tensor:
            it = iter(ts)
            return fn(s, *[next(it) if isinstance(a, Tensor) else a for a in args], **kwargs)
        return _inplace.apply_inplace(self, call, *tensors)
    method.__name__ = name
    method.__doc__ = f"In-place version of ``{name[:-1]}`` (bumps the version counter)."
    return method


def _type_conv(dt: _dtype.dtype):
    def conv(self: Tensor, memory_format: Any = None) -> Tensor:
        if self.__class__ is not Tensor and self.is_sparse:    # keeps the sparse layout
            return self.to(dt)
        return ops.to(self, dt, memory_format=memory_format)
    conv.__name__ = dt.name
    conv.__doc__ = f"Cast to ``ndgrad.{dt.name}``."
    return conv


# Tensor.type(): PyTorch's legacy type strings, which programs compare against
# (``x.type() == 'torch.FloatTensor'``); ``type(s)`` accepts them and the ``ndgrad.`` spellings.
# A sparse tensor's are ``'torch.sparse.FloatTensor'``; a cast keeps the tensor's layout
# whichever name it is given (as in torch).
_TYPE_NAMES = {d.np: f"torch.{d._torch_name}Tensor" for d in _dtype._ALL}
_SPARSE_TYPE_NAMES = {d.np: f"torch.sparse.{d._torch_name}Tensor" for d in _dtype._ALL}
_TYPES_BY_NAME = {f"{lib}.{sp}{d._torch_name}Tensor": d for d in _dtype._ALL
                  for lib in ("torch", "ndgrad") for sp in ("", "sparse.")}


def _type(self: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """With no ``dtype``, the type string (``'torch.FloatTensor'``); else a cast to ``dtype``
    (an ndgrad dtype or a type string), ``self`` if it already has that type."""
    for k in kwargs:
        if k != "async":
            raise TypeError(f"type() got an unexpected keyword argument '{k}'")
    sparse = self.__class__ is not Tensor and self.is_sparse
    if dtype is None:
        return (_SPARSE_TYPE_NAMES if sparse else _TYPE_NAMES)[self.dtype.np]
    if isinstance(dtype, str):
        if dtype in ("torch.Tensor", "ndgrad.Tensor"):
            d = _dtype.get_default_dtype()
        else:
            d = _TYPES_BY_NAME.get(dtype)
        if d is None:
            if dtype.startswith(("torch.cuda.", "ndgrad.cuda.")):
                raise RuntimeError("Cannot initialize CUDA: ndgrad has no CUDA backend")
            raise ValueError(f"invalid type: '{dtype}'")
    elif isinstance(dtype, _dtype.dtype):
        d = dtype
    elif _legacy.legacy_dtype(dtype) is not None:      # ndgrad.DoubleTensor, ndgrad.Tensor
        d = _legacy.legacy_dtype(dtype)
        if d == self.dtype:
            return self
    elif isinstance(dtype, type):
        raise ValueError(f"invalid type: '{dtype.__name__}'")
    else:
        raise TypeError("dtype must be a type, str, or dtype object")
    if sparse:
        return self if d == self.dtype else self.to(d)
    return ops.to(self, d)


_type.__name__ = _type.__qualname__ = "type"


def _function_of_method(name: str):
    """PyTorch's module-level form of the in-place method ``name`` (``ndgrad.relu_(x)``)."""
    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``: in-place version of ``{name[:-1]}``."
    return fn


# exactly the in-place functions PyTorch has at module level, for the methods ndgrad has
abs_ = _function_of_method("abs_")
clamp_ = _function_of_method("clamp_")
clamp_max_ = _function_of_method("clamp_max_")
clamp_min_ = _function_of_method("clamp_min_")
clip_ = _function_of_method("clip_")
cos_ = _function_of_method("cos_")
detach_ = _function_of_method("detach_")
exp_ = _function_of_method("exp_")
fill_ = _function_of_method("fill_")
log_ = _function_of_method("log_")
neg_ = _function_of_method("neg_")
reciprocal_ = _function_of_method("reciprocal_")
relu_ = _function_of_method("relu_")
sigmoid_ = _function_of_method("sigmoid_")
sin_ = _function_of_method("sin_")
sqrt_ = _function_of_method("sqrt_")
tanh_ = _function_of_method("tanh_")
zero_ = _function_of_method("zero_")
exp2_ = _function_of_method("exp2_")
expm1_ = _function_of_method("expm1_")
log2_ = _function_of_method("log2_")
log10_ = _function_of_method("log10_")
log1p_ = _function_of_method("log1p_")
rsqrt_ = _function_of_method("rsqrt_")
square_ = _function_of_method("square_")
tan_ = _function_of_method("tan_")
asin_ = _function_of_method("asin_")
acos_ = _function_of_method("acos_")
atan_ = _function_of_method("atan_")
sinh_ = _function_of_method("sinh_")
cosh_ = _function_of_method("cosh_")
asinh_ = _function_of_method("asinh_")
acosh_ = _function_of_method("acosh_")
atanh_ = _function_of_method("atanh_")
erf_ = _function_of_method("erf_")
erfc_ = _function_of_method("erfc_")
floor_ = _function_of_method("floor_")
ceil_ = _function_of_method("ceil_")
trunc_ = _function_of_method("trunc_")
frac_ = _function_of_method("frac_")
round_ = _function_of_method("round_")
deg2rad_ = _function_of_method("deg2rad_")
rad2deg_ = _function_of_method("rad2deg_")
logit_ = _function_of_method("logit_")
sinc_ = _function_of_method("sinc_")
nan_to_num_ = _function_of_method("nan_to_num_")


def _index_put(self: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    return ops.shape.index_put_indices(self, indices, values, accumulate)


_NO_VALUE: Any = object()


def _new_factory(fn_name: str):
    def make(self: Tensor, *shape: Any, size: Any = _NO_VALUE, dtype: Any = None,
             layout: Any = None, device: Any = None, pin_memory: Any = None,
             requires_grad: bool = False) -> Tensor:
        name = "new_" + fn_name
        if size is not _NO_VALUE:           # x.new_zeros(size=(2, 3)), as in torch
            if shape:
                raise TypeError(f"{name}() got multiple values for argument 'size'")
            if not isinstance(size, (tuple, list)):
                raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not "
                                f"{type(size).__name__}")
            shape = (size,)
        elif not shape:
            raise TypeError(f"{name}() missing 1 required positional arguments: \"size\"")
        if not _signature._is_size_varargs(shape):
            bad = shape[0] if len(shape) == 1 else next(
                (v for v in shape if not _signature._int_elem(v)), shape[0])
            raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, "
                            f"not {type(bad).__name__}")
        size = shape
        sparse = _creation.check_extras("new_" + fn_name, layout, pin_memory)
        d = dtype if dtype is not None else self.dtype
        if device is None:                  # self's device, not the default one
            device = self.device
        if fn_name == "zeros":              # the generic negative-size words, not zeros' own
            _creation._as_shape(size)
        r = getattr(_creation, fn_name)(*size, dtype=d, device=device,
                                        requires_grad=requires_grad)
        return _layout.factory_layout(r, layout) if sparse else r
    make.__name__ = make.__qualname__ = "new_" + fn_name
    # a wrong keyword's TypeError names the code object's qualified name
    names: dict[str, Any] = {"co_name": make.__name__}
    if sys.version_info >= (3, 11):
        names["co_qualname"] = make.__name__
    make.__code__ = make.__code__.replace(**names)
    return make


def _new_full(self: Tensor, size: Any = _NO_VALUE, fill_value: Any = _NO_VALUE, *,
              dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
              requires_grad: bool = False) -> Tensor:
    # torch's new_full(size, fill_value): the size one sequence, positional or by keyword
    if size is _NO_VALUE or fill_value is _NO_VALUE:
        missing = [n for n, v in (("size", size), ("fill_value", fill_value)) if v is _NO_VALUE]
        raise TypeError(f"new_full() missing {len(missing)} required positional argument"
                        f"{'s' if len(missing) == 1 else ''}: "
                        + ", ".join(f'"{n}"' for n in missing))
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    sparse = _creation.check_extras("new_full", layout, pin_memory)
    r = _creation.full(size, fill_value, dtype=dtype if dtype is not None else self.dtype,
                       device=device if device is not None else self.device,   # self's device
                       requires_grad=requires_grad)
    return _layout.factory_layout(r, layout) if sparse else r


_new_full.__name__ = _new_full.__qualname__ = "new_full"
_code_names: dict[str, Any] = {"co_name": "new_full"}    # named in a wrong keyword's TypeError
if sys.version_info >= (3, 11):
    _code_names["co_qualname"] = "new_full"
_new_full.__code__ = _new_full.__code__.replace(**_code_names)


def _new_tensor(self: Tensor, data: Any, dtype: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    if isinstance(data, Tensor):
        _creation.warn_copy_construct("tensor.new_tensor")
        data = data.detach()    # warned once, as PyTorch does
    return _creation.tensor(data, dtype=dtype if dtype is not None else self.dtype,
                            device=self.device if device is None else device,
                            requires_grad=requires_grad)


# ``Tensor.backward`` is the autograd API (a layer above tensor.py, Note [Layers] in
# autograd/__init__.py), so it is bound here like the other methods.
def _backward(self: Tensor, gradient: Any = None, retain_graph: Any = None,
              create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate the gradient of this tensor into the leaves' ``.grad``
    (see :func:`ndgrad.autograd.backward`)."""
    _autograd_api.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


_backward.__name__ = "backward"
_backward.__qualname__ = "Tensor.backward"
Tensor.backward = _backward


def _max(self: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return ops.max(self, dim, keepdim)


def _min(self: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return ops.min(self, dim, keepdim)


def _split(self: Tensor, split_size: Any, dim: int = 0) -> tuple:
    # the method names its first argument split_size, the function split_size_or_sections
    return ops.split(self, split_size, dim)


_METHODS = {
    # operators
    "__add__": _fast_binary(_pw.ADD, _pw.ADD_S, "add"),
    "__radd__": _fast_binary(_pw.ADD, _pw.ADD_S, "add"),
    "__sub__": _fast_binary(_pw.SUB, _pw.SUB_S, "sub"),
    "__rsub__": _rsub_method,
    "__mul__": _fast_binary(_pw.MUL, _pw.MUL_S, "mul"),
    "__rmul__": _fast_binary(_pw.MUL, _pw.MUL_S, "mul"),
    "__truediv__": _fast_binary(_pw.DIV, _pw.DIV_S, "div", True),
    "__rtruediv__": _rtruediv_method,
    "__floordiv__": _operator(lambda s, o: ops.pointwise.floor_divide(s, o), "__floordiv__"),
    "__rfloordiv__": _operator(lambda s, o: ops.pointwise.floor_divide(o, s), "__rfloordiv__"),
    "floor_divide": lambda s, o: ops.pointwise.floor_divide(s, o),
    "__pow__": _operator(lambda s, o: ops.pow(s, o), "__pow__"),
    "__rpow__": _operator(_rpow, "__rpow__"),
    "__matmul__": _matmul_op,
    "__rmatmul__": _operator(_rmatmul, "__rmatmul__"),
    "__neg__": _neg,
    "__pos__": _pos,
    "__abs__": _abs,
    "__eq__": _eq_method,
    "__ne__": _operator(lambda s, o: ops.ne(s, o), "__ne__"),
    "__lt__": _operator(lambda s, o: ops.lt(s, o), "__lt__"),
    "__le__": _operator(lambda s, o: ops.le(s, o), "__le__"),
    "__gt__": _operator(lambda s, o: ops.gt(s, o), "__gt__"),
    "__ge__": _operator(lambda s, o: ops.ge(s, o), "__ge__"),
    "__and__": _operator(lambda s, o: ops.bitwise_and(s, o), "__and__"),
    "__or__": _operator(lambda s, o: ops.bitwise_or(s, o), "__or__"),
    "__xor__": _operator(lambda s, o: ops.bitwise_xor(s, o), "__xor__"),
    "__rand__": _operator(lambda s, o: ops.bitwise_and(s, o), "__rand__"),
    "__ror__": _operator(lambda s, o: ops.bitwise_or(s, o), "__ror__"),
    "__invert__": _invert,
    "__getitem__": _getitem,
    "__setitem__": _setitem,
    "index_put": _index_put,
    "__iadd__": _operator(lambda s, o: _inplace.inplace_binary(
        s, o, np.add, lambda a, b: a + b), "__iadd__"),
    "__isub__": _operator(lambda s, o: _inplace.inplace_binary(
        s, o, np.subtract, lambda a, b: a - b), "__isub__"),
    "__imul__": _operator(lambda s, o: _inplace.inplace_binary(
        s, o, np.multiply, lambda a, b: a * b), "__imul__"),
    "__itruediv__": _operator(lambda s, o: _inplace.inplace_binary(
        s, o, np.true_divide, lambda a, b: a / b), "__itruediv__"),
    # arithmetic
    "add": lambda s, o, *, alpha=1: ops.add(s, o, alpha=alpha),
    "sub": lambda s, o, *, alpha=1: ops.sub(s, o, alpha=alpha),
    "mul": lambda s, o: ops.mul(s, o),
    "div": lambda s, o, *, rounding_mode=None: ops.div(s, o, rounding_mode=rounding_mode),
    "true_divide": lambda s, o: ops.div(s, o),
    "pow": lambda s, o: ops.pow(s, o),
    "neg": ops.neg, "exp": ops.exp, "log": ops.log, "sin": ops.sin, "cos": ops.cos,
    "tanh": ops.tanh, "sigmoid": ops.sigmoid, "relu": ops.relu, "sqrt": ops.sqrt,
    "abs": ops.abs, "sign": ops.sign, "sgn": ops.sgn, "conj": ops.conj,
    "reciprocal": ops.reciprocal,
    "exp2": ops.exp2,
    "expm1": ops.expm1,
    "log2": ops.log2,
    "log10": ops.log10,
    "log1p": ops.log1p,
    "rsqrt": ops.rsqrt,
    "square": ops.square,
    "tan": ops.tan,
    "asin": ops.asin,
    "acos": ops.acos,
    "atan": ops.atan,
    "sinh": ops.sinh,
    "cosh": ops.cosh,
    "asinh": ops.asinh,
    "acosh": ops.acosh,
    "atanh": ops.atanh,
    "erf": ops.erf,
    "erfc": ops.erfc,
    "erfinv": ops.erfinv,
    "lgamma": ops.lgamma,
    "digamma": ops.digamma,
    "floor": ops.floor,
    "ceil": ops.ceil,
    "trunc": ops.trunc,
    "frac": ops.frac,
    "round": ops.round,
    "deg2rad": ops.deg2rad,
    "rad2deg": ops.rad2deg,
    "logit": ops.logit,
    "sinc": ops.sinc,
    "angle": ops.angle,
    "positive": ops.positive,
    "signbit": ops.signbit,
    "nan_to_num": ops.nan_to_num,
    "clamp": lambda s, min=None, max=None: ops.clamp(s, min, max),
    "clip": lambda s, min=None, max=None: ops.clamp(s, min, max),
    "clamp_min": ops.clamp_min, "clamp_max": ops.clamp_max,
    "maximum": ops.maximum, "minimum": ops.minimum,
    "where": lambda s, condition, other: ops.where(condition, s, other),
    "masked_fill": ops.pointwise.masked_fill,
    "eq": ops.eq, "ne": ops.ne, "lt": ops.lt, "le": ops.le, "gt": ops.gt, "ge": ops.ge,
    "logical_not": ops.logical_not, "logical_and": ops.logical_and,
    "logical_or": ops.logical_or, "logical_xor": ops.logical_xor,
    "bitwise_and": ops.bitwise_and, "bitwise_or": ops.bitwise_or,
    "bitwise_xor": ops.bitwise_xor, "isposinf": ops.isposinf, "isneginf": ops.isneginf,
    "isreal": ops.isreal, "isnan": ops.isnan, "isinf": ops.isinf,
    "isfinite": ops.isfinite, "equal": ops.equal, "allclose": ops.allclose,
    "isclose": ops.isclose,
    # reductions
    "sum": lambda s, dim=None, keepdim=False, *, dtype=None: ops.sum(s, dim, keepdim,
                                                                     dtype=dtype),
    "mean": lambda s, dim=None, keepdim=False, *, dtype=None: ops.mean(s, dim, keepdim,
                                                                       dtype=dtype),
    "prod": lambda s, dim=None, keepdim=False, *, dtype=None: ops.prod(s, dim, keepdim,
                                                                       dtype=dtype),
    "max": _max, "min": _min, "argmax": ops.argmax, "argmin": ops.argmin,
    "sum_to_size": ops.sum_to_size, "_sum_to_checked": ops.reduction.sum_to_checked,
    "all": ops.reduction.all_, "any": ops.reduction.any_, "gather": ops.gather,
    "softmax": ops.softmax, "log_softmax": ops.log_softmax, "logsumexp": ops.logsumexp,
    "cumsum": lambda s, dim, *, dtype=None: ops.cumsum(s, dim, dtype=dtype),
    "index_select": ops.index_select, "var": ops.var, "std": ops.std,
    "amax": ops.amax, "amin": ops.amin,
    # linear algebra
    "matmul": _tensor_arg_method(ops.matmul, "matmul", "other"),
    "mm": _tensor_arg_method(ops.mm, "mm", "mat2"),
    "bmm": _tensor_arg_method(ops.bmm, "bmm", "mat2"),
    "mv": _tensor_arg_method(ops.mv, "mv", "vec"),
    "dot": _tensor_arg_method(ops.dot, "dot", "tensor"),
    "norm": lambda s, p="fro", dim=None, keepdim=False, dtype=None: ops.norm(
        s, p, dim, keepdim, dtype=dtype),
    # shapes and views
    "view": ops.view, "reshape": ops.reshape, "flatten": ops.flatten,
    "view_as": lambda s, o: ops.view(s, o._data.shape),
    "reshape_as": lambda s, o: ops.reshape(s, o._data.shape),
    "transpose": ops.transpose, "swapaxes": ops.transpose, "permute": ops.permute,
    "t": ops.t, "movedim": ops.movedim,
    "expand": ops.expand, "expand_as": ops.expand_as, "squeeze": ops.squeeze,
    "unsqueeze": ops.unsqueeze, "select": ops.select, "narrow": ops.narrow,
    "unbind": ops.unbind, "split": _split, "chunk": ops.chunk,
    "contiguous": ops.contiguous, "clone": ops.clone, "to": ops.to,
    "type_as": lambda s, o: ops.to(s, o.dtype), "type": _type,
    "apply_": _legacy.apply_, "map_": _legacy.map_, "map2_": _legacy.map2_,
    "new": _legacy.new,
    "triu": ops.triu, "tril": ops.tril,
    "float": _type_conv(_dtype.float32), "double": _type_conv(_dtype.float64),
    "half": _type_conv(_dtype.float16), "bfloat16": _type_conv(_dtype.bfloat16),
    "long": _type_conv(_dtype.int64), "int": _type_conv(_dtype.int32),
    "bool": _type_conv(_dtype.bool), "byte": _type_conv(_dtype.uint8),
    "char": _type_conv(_dtype.int8), "short": _type_conv(_dtype.int16),
    "cfloat": _type_conv(_dtype.complex64), "cdouble": _type_conv(_dtype.complex128),
    "cpu": lambda s, memory_format=None: ops.to(s, "cpu", memory_format=memory_format)
    if s.is_meta else ops.to(s, memory_format=memory_format),
    "real_part": ops.real_part,
    # in place
    "add_": _binary_inplace_of(ops.add, np.add, "add_"),
    "sub_": _binary_inplace_of(ops.sub, np.subtract, "sub_"),
    "mul_": _binary_inplace_of(ops.mul, np.multiply, "mul_"),
    "div_": _binary_inplace_of(ops.div, np.true_divide, "div_"),
    "pow_": _inplace_of(ops.pow, "pow_"), "neg_": _inplace_of(ops.neg, "neg_"),
    "exp_": _inplace_of(ops.exp, "exp_"), "log_": _inplace_of(ops.log, "log_"),
    "sqrt_": _inplace_of(ops.sqrt, "sqrt_"), "abs_": _inplace_of(ops.abs, "abs_"),
    "sin_": _inplace_of(ops.sin, "sin_"), "cos_": _inplace_of(ops.cos, "cos_"),
    "clamp_": _inplace_of(ops.clamp, "clamp_"), "clip_": _inplace_of(ops.clamp, "clip_"),
    "clamp_min_": _inplace_of(ops.clamp_min, "clamp_min_"),
    "clamp_max_": _inplace_of(ops.clamp_max, "clamp_max_"),
    "relu_": _inplace_of(ops.relu, "relu_"), "sigmoid_": _inplace_of(ops.sigmoid, "sigmoid_"),
    "tanh_": _inplace_of(ops.tanh, "tanh_"),
    "reciprocal_": _inplace_of(ops.reciprocal, "reciprocal_"),
    "masked_fill_": _inplace.masked_fill_,
    "triu_": _inplace_of(ops.triu, "triu_"), "tril_": _inplace_of(ops.tril, "tril_"),
    "exp2_": _inplace_of(ops.exp2, "exp2_"),
    "expm1_": _inplace_of(ops.expm1, "expm1_"),
    "log2_": _inplace_of(ops.log2, "log2_"),
    "log10_": _inplace_of(ops.log10, "log10_"),
    "log1p_": _inplace_of(ops.log1p, "log1p_"),
    "rsqrt_": _inplace_of(ops.rsqrt, "rsqrt_"),
    "square_": _inplace_of(ops.square, "square_"),
    "tan_": _inplace_of(ops.tan, "tan_"),
    "asin_": _inplace_of(ops.asin, "asin_"),
    "acos_": _inplace_of(ops.acos, "acos_"),
    "atan_": _inplace_of(ops.atan, "atan_"),
    "sinh_": _inplace_of(ops.sinh, "sinh_"),
    "cosh_": _inplace_of(ops.cosh, "cosh_"),
    "asinh_": _inplace_of(ops.unary.asinh_inplace, "asinh_"),
    "acosh_": _inplace_of(ops.unary.acosh_inplace, "acosh_"),
    "atanh_": _inplace_of(ops.unary.atanh_inplace, "atanh_"),
    "erf_": _inplace_of(ops.erf, "erf_"),
    "erfc_": _inplace_of(ops.erfc, "erfc_"),
    "erfinv_": _inplace_of(ops.erfinv, "erfinv_"),
    "lgamma_": _inplace_of(ops.lgamma, "lgamma_"),
    "digamma_": _inplace_of(ops.digamma, "digamma_"),
    "floor_": _inplace_of(ops.floor, "floor_"),
    "ceil_": _inplace_of(ops.ceil, "ceil_"),
    "trunc_": _inplace_of(ops.trunc, "trunc_"),
    "frac_": _inplace_of(ops.frac, "frac_"),
    "round_": _inplace_of(ops.round, "round_"),
    "deg2rad_": _inplace_of(ops.deg2rad, "deg2rad_"),
    "rad2deg_": _inplace_of(ops.rad2deg, "rad2deg_"),
    "logit_": _inplace_of(ops.logit, "logit_"),
    "sinc_": _inplace_of(ops.sinc, "sinc_"),
    "nan_to_num_": _inplace_of(ops.nan_to_num, "nan_to_num_"),
    "zero_": _inplace.zero_, "fill_": _inplace.fill_, "copy_": _inplace.copy_,
    **{n + "_": _inplace_of(getattr(ops.pointwise, n, None) or getattr(ops, n), n + "_")
       for n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                 "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
                 "bitwise_not", "sign", "sgn", "cumsum", "floor_divide")},
    # factories
    "new_zeros": _new_factory("zeros"), "new_ones": _new_factory("ones"),
    "new_empty": _new_factory("empty"), "new_full": _new_full,
    "new_tensor": _new_tensor,
    # ---- reduce (issue 8) ----
    "aminmax": lambda s, *, dim=None, keepdim=False: ops.aminmax(s, dim=dim, keepdim=keepdim),
    "nansum": lambda s, dim=None, keepdim=False, *, dtype=None: ops.nansum(s, dim, keepdim,
                                                                           dtype=dtype),
    "nanmean": lambda s, dim=None, keepdim=False, *, dtype=None: ops.nanmean(s, dim, keepdim,
                                                                             dtype=dtype),
    "count_nonzero": ops.count_nonzero,
    "cumprod": lambda s, dim, *, dtype=None: ops.cumprod(s, dim, dtype=dtype),
    "cumprod_": _inplace_of(lambda s, dim, *, dtype=None: ops.cumprod(s, dim, dtype=dtype),
                            "cumprod_"),
    "cummax": ops.cummax, "cummin": ops.cummin, "logcumsumexp": ops.logcumsumexp,
    "sort": ops.sort, "argsort": ops.argsort, "msort": ops.msort, "topk": ops.topk,
    "kthvalue": ops.kthvalue, "median": ops.median, "nanmedian": ops.nanmedian,
    "mode": ops.mode,
    "quantile": lambda s, q, dim=None, keepdim=False, *, interpolation="linear": ops.quantile(
        s, q, dim, keepdim, interpolation=interpolation),
    "nanquantile": lambda s, q, dim=None, keepdim=False, *, interpolation="linear":
        ops.nanquantile(s, q, dim, keepdim, interpolation=interpolation),
    "diff": ops.diff, "trace": ops.trace,
    "cov": lambda s, *, correction=1, fweights=None, aweights=None: ops.cov(
        s, correction=correction, fweights=fweights, aweights=aweights),
    "corrcoef": ops.corrcoef, "renorm": ops.renorm, "renorm_": _inplace_of(ops.renorm, "renorm_"),
    "dist": ops.dist,
    # ---- end reduce ----
}

# ---- fft / special (issue 8) ----
from .ops import fft as _fft_ops, special as _sp  # noqa: E402,F401
_METHODS.update({
    "i0": _sp.i0, "i0_": _inplace_of(_sp.i0, "i0_"),
    "polygamma": lambda s, n: _sp.polygamma(n, s),
    "polygamma_": _inplace_of(lambda s, n: _sp.polygamma(n, s), "polygamma_"),
    "mvlgamma": _sp.mvlgamma, "mvlgamma_": _inplace_of(_sp.mvlgamma, "mvlgamma_"),
    "igamma": _sp.igamma, "igamma_": _inplace_of(_sp.igamma, "igamma_"),
    "igammac": _sp.igammac, "igammac_": _inplace_of(_sp.igammac, "igammac_"),
    "stft": _fft_ops.stft, "istft": _fft_ops.istft,
})
i0_ = _function_of_method("i0_")
# ---- end fft / special (issue 8) ----
# ---- products and solvers (issue 8) ----
_pr = ops.products
_ls = ops.linalg_solve
_METHODS.update({
    "addmm": _pr.addmm, "addmm_": _inplace_of(_pr.addmm, "addmm_"),
    "addmv": _pr.addmv, "addmv_": _inplace_of(_pr.addmv, "addmv_"),
    "addr": _pr.addr, "addr_": _inplace_of(_pr.addr, "addr_"),
    "addbmm": _pr.addbmm, "addbmm_": _inplace_of(_pr.addbmm, "addbmm_"),
    "baddbmm": _pr.baddbmm, "baddbmm_": _inplace_of(_pr.baddbmm, "baddbmm_"),
    "kron": _pr.kron, "cross": _pr.cross, "inner": _pr.inner, "outer": _pr.outer,
    "ger": _pr.outer, "vdot": _pr.vdot, "matrix_power": _pr.matrix_power,
    "det": _ls.det, "slogdet": _ls.slogdet_old, "logdet": _ls.logdet,
    "inverse": _ls.linalg_inv, "matrix_exp": _ls.matrix_exp,
    "triangular_solve": _ls.triangular_solve, "cholesky": _ls.cholesky_old,
    "cholesky_solve": _ls.cholesky_solve, "cholesky_inverse": _ls.cholesky_inverse,
    "lu": _ls.lu_old, "lu_solve": _ls.lu_solve_old,
})
# ---- end products and solvers (issue 8) ----
# ---- decompositions (issue 8) ----
from .ops import linalg_decomp as _decomp  # noqa: E402

_METHODS.update({"qr": _decomp.qr, "svd": _decomp.svd, "pinverse": _decomp.pinverse,
                 "geqrf": _decomp.geqrf, "ormqr": _decomp.ormqr})


def _mH_property(s: Tensor) -> Tensor:
    if s.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {s.ndim}-D tensor.")
    return ops.conj(ops.transpose(s, -2, -1))


def _H_property(s: Tensor) -> Tensor:
    if s.ndim > 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{s.ndim}-D tensor.")
    return ops.conj(ops.transpose(s, 0, 1)) if s.ndim == 2 else ops.conj(s)


if not hasattr(Tensor, "mH"):
    Tensor.mH = property(_mH_property)
if not hasattr(Tensor, "H"):
    Tensor.H = property(_H_property)
# ---- end decompositions ----

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)

Tensor.T = property(lambda s: s.permute(tuple(range(s.ndim - 1, -1, -1))))
Tensor.mT = property(lambda s: ops.transpose(s, -2, -1))
Tensor.real = property(lambda s: ops.shape.real(s))
Tensor.imag = property(lambda s: ops.shape.imag(s))
Tensor.diagonal = ops.shape.diagonal
Tensor.unfold = ops.shape.unfold
Tensor.as_strided = ops.shape.tensor_as_strided

# ---- indexing (issue 8) ----
_ix = ops.indexing


def _masked_scatter_inplace(self: Tensor, mask: Any, source: Any) -> Tensor:
    if isinstance(mask, Tensor) and isinstance(source, Tensor):
        shape = np.broadcast_shapes(self._data.shape, mask._data.shape) \
            if mask._data.ndim <= self._data.ndim else None
        if shape != self._data.shape:
            raise broadcast_error(self._data.shape, mask._data.shape) if shape is None else \
                RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                             f"broadcast shape {list(shape)}")
    return _inplace_of(_ix.masked_scatter, "masked_scatter_")(self, mask, source)


for _name, _fn in {
        "scatter": _ix.scatter, "scatter_add": _ix.scatter_add,
        "scatter_reduce": _ix.scatter_reduce, "index_add": _ix.index_add,
        "index_copy": _ix.index_copy, "index_fill": _ix.index_fill,
        "index_reduce": _ix.index_reduce, "masked_select": _ix.masked_select,
        "masked_scatter": _ix.masked_scatter, "take": _ix.take,
        "take_along_dim": _ix.take_along_dim, "put": _ix.put, "nonzero": _ix.nonzero,
        "argwhere": _ix.argwhere, "nonzero_static": _ix.nonzero_static}.items():
    setattr(Tensor, _name, _fn)
for _name, _fn in {
        "scatter_": _ix.scatter, "scatter_add_": _ix.scatter_add,
        "scatter_reduce_": _ix.scatter_reduce, "index_add_": _ix.index_add,
        "index_copy_": _ix.index_copy, "index_fill_": _ix.index_fill,
        "index_reduce_": _ix.index_reduce, "put_": _ix.put,
        "index_put_": _ix.index_put}.items():
    setattr(Tensor, _name, _inplace_of(_fn, _name))
Tensor.masked_scatter_ = _masked_scatter_inplace
index_put_ = _function_of_method("index_put_")

# ---- rearrange (issue 8) ----
_ra = ops.rearrange
_REARRANGE_METHODS = {
    "flip": lambda s, *dims: _ra.flip(s, dims[0] if len(dims) == 1 and
                                      isinstance(dims[0], (tuple, list)) else dims),
    "fliplr": _ra.fliplr, "flipud": _ra.flipud, "roll": _ra.roll, "rot90": _ra.rot90,
    "repeat": _ra.repeat,
    "tile": lambda s, *dims: _ra.tile(s, dims[0] if len(dims) == 1 and
                                      isinstance(dims[0], (tuple, list)) else dims),
    "repeat_interleave": _ra.repeat_interleave, "broadcast_to": _ra.broadcast_to,
    "ravel": _ra.ravel, "swapdims": _ra.swapdims, "moveaxis": _ra.moveaxis,
    "adjoint": _ra.adjoint, "unflatten": _ra.unflatten, "diag": _ra.diag,
    "diag_embed": _ra.diag_embed, "diagflat": _ra.diagflat, "tensor_split": _ra.tensor_split,
    "hsplit": _ra.hsplit, "vsplit": _ra.vsplit, "dsplit": _ra.dsplit,
    "split_with_sizes": _ra.split_with_sizes, "unsafe_split": _ra.unsafe_split,
    "unsafe_split_with_sizes": _ra.unsafe_split_with_sizes, "unsafe_chunk": _ra.unsafe_chunk,
    "narrow_copy": _ra.narrow_copy, "select_scatter": _ra.select_scatter,
    "slice_scatter": _ra.slice_scatter, "diagonal_scatter": _ra.diagonal_scatter,
    "as_strided_scatter": _ra.as_strided_scatter, "conj_physical": _ra.conj_physical,
    "conj_physical_": _ra.conj_physical_,
    "resolve_conj": _ra.resolve_conj, "resolve_neg": _ra.resolve_neg,
    "is_conj": lambda s: False, "is_neg": lambda s: False,
}
for _name, _fn in _REARRANGE_METHODS.items():
    setattr(Tensor, _name, _fn)
Tensor.T = property(_ra._T)
Tensor.mT = property(_ra._mT)
Tensor.H = property(_ra._H)
Tensor.mH = property(_ra._mH)
conj_physical_ = _function_of_method("conj_physical_")

# ---- binary (issue 8) ----
def _binary_methods() -> None:
    b = ops.binary

    def float_power_(self: Tensor, exponent: Any) -> Tensor:
        cplx = self._data.dtype.kind == "c" or (
            exponent._data.dtype.kind == "c" if isinstance(exponent, Tensor)
            else isinstance(exponent, complex))
        want = _dtype.complex128 if cplx else _dtype.float64
        if self._data.dtype != want.np:
            raise RuntimeError(f"the base given to float_power_ has dtype "
                               f"{_dtype._FROM_NP[self._data.dtype]._torch_name} but the "
                               f"operation's result requires dtype {want._torch_name}")
        return _inplace_of(b.float_power, "float_power_")(self, exponent)

    def mod(self: Tensor, other: Any) -> Tensor:
        return b.remainder(self, other)

    def rmod(self: Tensor, other: Any) -> Tensor:
        return b.remainder(other, self)

    def lshift(self: Tensor, other: Any) -> Tensor:
        return b.bitwise_left_shift(self, other)

    def rshift(self: Tensor, other: Any) -> Tensor:
        return b.bitwise_right_shift(self, other)

    methods = {
        "atan2": b.atan2, "arctan2": b.atan2, "remainder": b.remainder, "fmod": b.fmod,
        "hypot": b.hypot, "fmax": b.fmax, "fmin": b.fmin, "copysign": b.copysign,
        "xlogy": b.xlogy, "logaddexp": b.logaddexp, "logaddexp2": b.logaddexp2,
        "lerp": b.lerp,
        "addcmul": lambda s, t1, t2, *, value=1: b.addcmul(s, t1, t2, value=value),
        "addcdiv": lambda s, t1, t2, *, value=1: b.addcdiv(s, t1, t2, value=value),
        "ldexp": b.ldexp, "float_power": b.float_power, "heaviside": b.heaviside,
        "nextafter": b.nextafter, "frexp": b.frexp,
        "bitwise_left_shift": b.bitwise_left_shift,
        "bitwise_right_shift": b.bitwise_right_shift, "gcd": b.gcd, "lcm": b.lcm,
        "float_power_": float_power_, "logical_xor": b.logical_xor,
        "bitwise_and": b.bitwise_and, "bitwise_or": b.bitwise_or,
        "bitwise_xor": b.bitwise_xor,
        "__mod__": _operator(mod, "__mod__"), "__rmod__": _operator(rmod, "__rmod__"),
        "__lshift__": _operator(lshift, "__lshift__"),
        "__rlshift__": _operator(lambda s, o: b.bitwise_left_shift(o, s), "__rlshift__"),
        "__rshift__": _operator(rshift, "__rshift__"),
        "__rrshift__": _operator(lambda s, o: b.bitwise_right_shift(o, s), "__rrshift__"),
    }
    for name, fn in (("atan2_", b.atan2), ("arctan2_", b.atan2), ("remainder_", b.remainder),
                     ("fmod_", b.fmod), ("hypot_", b.hypot), ("copysign_", b.copysign),
                     ("xlogy_", b.xlogy), ("lerp_", b.lerp), ("addcmul_", b.addcmul),
                     ("addcdiv_", b.addcdiv), ("ldexp_", b.ldexp), ("heaviside_", b.heaviside),
                     ("nextafter_", b.nextafter), ("true_divide_", ops.div),
                     ("bitwise_left_shift_", b.bitwise_left_shift),
                     ("bitwise_right_shift_", b.bitwise_right_shift), ("gcd_", b.gcd),
                     ("lcm_", b.lcm), ("floor_divide_", ops.pointwise.floor_divide),
                     ("bitwise_and_", b.bitwise_and), ("bitwise_or_", b.bitwise_or),
                     ("bitwise_xor_", b.bitwise_xor), ("logical_and_", ops.logical_and),
                     ("logical_or_", ops.logical_or), ("logical_xor_", b.logical_xor)) + tuple(
                         (n + "_", b.compare_inplace(n)) for n in b.COMPARE_INPLACE):
        methods[name] = _inplace_of(fn, name)
    def rdiv(self: Tensor, other: Any) -> Tensor:
        # PyTorch's Tensor.__rdiv__ is ``self.reciprocal() * other`` (a non-tensor ``self``,
        # when called unbound, raises AttributeError there too)
        if not isinstance(self, Tensor):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                 "'reciprocal'")
        if type(other) is not Tensor and not _operand(other):
            return NotImplemented
        return ops.reciprocal(self) * other
    methods["__rdiv__"] = rdiv

    def rmatmul(self: Tensor, other: Any) -> Tensor:
        if isinstance(other, Tensor):        # called directly: other @ self
            return ops.matmul(other, self)
        return _rmatmul(self, other)
    methods["__rmatmul__"] = _operator(rmatmul, "__rmatmul__")
    def reflected(fn: Any, name: str) -> Any:
        # PyTorch's C-level reflected operators refuse a non-tensor ``self`` (called unbound)
        op = _operator(fn, name)

        def method(self: Any, other: Any) -> Tensor:
            if not isinstance(self, Tensor):
                raise TypeError(f"descriptor '{name}' for 'Tensor' objects doesn't apply to a "
                                f"'{type(self).__name__}' object")
            return op(self, other)
        method.__name__ = name
        return method
    # &, |, ^ through the functions that refuse floats with PyTorch's NotImplementedError
    methods["__and__"] = _operator(lambda s, o: b.bitwise_and(s, o), "__and__")
    methods["__or__"] = _operator(lambda s, o: b.bitwise_or(s, o), "__or__")
    methods["__xor__"] = _operator(lambda s, o: b.bitwise_xor(s, o), "__xor__")
    methods["__rand__"] = reflected(lambda s, o: b.bitwise_and(s, o), "__rand__")
    methods["__ror__"] = reflected(lambda s, o: b.bitwise_or(s, o), "__ror__")
    methods["__rxor__"] = reflected(lambda s, o: b.bitwise_xor(s, o), "__rxor__")
    methods["__ixor__"] = _operator(lambda s, o: s.bitwise_xor_(o), "__ixor__")
    methods["__iand__"] = _operator(lambda s, o: s.bitwise_and_(o), "__iand__")
    methods["__ior__"] = _operator(lambda s, o: s.bitwise_or_(o), "__ior__")
    methods["__imod__"] = _operator(lambda s, o: s.remainder_(o), "__imod__")
    methods["__ilshift__"] = _operator(lambda s, o: s.bitwise_left_shift_(o), "__ilshift__")
    methods["__irshift__"] = _operator(lambda s, o: s.bitwise_right_shift_(o), "__irshift__")
    for name, fn in methods.items():
        setattr(Tensor, name, fn)


_binary_methods()
xlogy_ = _function_of_method("xlogy_")
ldexp_ = _function_of_method("ldexp_")
gcd_ = _function_of_method("gcd_")
lcm_ = _function_of_method("lcm_")
# ---- end binary ----

# ---- sparse (issue 10) ----


def _dense_to_sparse(self: Tensor, sparse_dim: Any = None, *, layout: Any = None,
                     blocksize: Any = None, dense_dim: Any = None) -> Any:
    """The sparse form of a dense tensor (``x.to_sparse()``): COO, or CSR/CSC with
    ``layout=``."""
    if layout is _layout.sparse_csr or layout is _layout.sparse_csc:
        return ops.sparse_compressed.to_compressed(self, layout, dense_dim)
    if layout is _layout.strided:
        return self
    if layout is not None and layout is not _layout.sparse_coo:
        raise NotImplementedError(f"to_sparse: layout {layout} is not supported (only "
                                  "torch.sparse_coo, sparse_csr and sparse_csc)")
    return ops.sparse_coo.to_sparse(self, sparse_dim)


def _dense_to_sparse_csr(self: Tensor, dense_dim: Any = None) -> Any:
    """The sparse CSR form (``batch dims x rows x cols x dense_dim dims``), int64 indices.

    Example:
        >>> import ndgrad
        >>> ndgrad.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csr().crow_indices()
        tensor([0, 1, 2])
    """
    return ops.sparse_compressed.to_compressed(self, _layout.sparse_csr, dense_dim)


def _dense_to_sparse_csc(self: Tensor, dense_dim: Any = None) -> Any:
    """The sparse CSC form (``batch dims x rows x cols x dense_dim dims``), int64 indices.

    Example:
        >>> import ndgrad
        >>> ndgrad.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csc().row_indices()
        tensor([1, 0])
    """
    return ops.sparse_compressed.to_compressed(self, _layout.sparse_csc, dense_dim)


def _dense_to_dense(self: Tensor, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
    """A dense tensor is its own dense form."""
    return self if dtype is None else self.to(dtype)


def _dense_is_coalesced(self: Tensor) -> bool:
    raise RuntimeError("is_coalesced expected sparse coordinate tensor layout but got Strided")


Tensor.to_sparse = _dense_to_sparse
Tensor.to_sparse_coo = _dense_to_sparse
Tensor.to_sparse_csr = _dense_to_sparse_csr
Tensor.to_sparse_csc = _dense_to_sparse_csc
Tensor.to_dense = _dense_to_dense
Tensor.is_coalesced = _dense_is_coalesced
# ---- end sparse ----


# ---- in-place view ops (issue 8) ----
def _squeeze_(self: Tensor, dim: Any = None) -> Tensor:
    node = ("SqueezeBackward3" if dim is None else
            "SqueezeBackward5" if isinstance(dim, (tuple, list)) else "SqueezeBackward4")
    return _inplace.inplace_view(self, ops.squeeze, node, dim)


def _t_(self: Tensor) -> Tensor:
    if self._data.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is "
                           f"{self._data.ndim}D")
    return _inplace.inplace_view(self, ops.t, "TBackward1")


def _transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return _inplace.inplace_view(self, ops.transpose, "TransposeBackward1", dim0, dim1)


def _as_strided_(self: Tensor, size: Any, stride: Any, storage_offset: Any = None) -> Tensor:
    return _inplace.inplace_view(self, ops.shape.tensor_as_strided, "AsStridedBackward1",
                                 size, stride, storage_offset)


Tensor.squeeze_ = _squeeze_
def _unsqueeze_(self: Tensor, dim: int) -> Tensor:
    return _inplace.inplace_view(self, ops.unsqueeze, "UnsqueezeBackward1", dim)


Tensor.unsqueeze_ = _unsqueeze_
Tensor.t_ = _t_
Tensor.transpose_ = _transpose_
Tensor.swapaxes_ = _transpose_
Tensor.swapdims_ = _transpose_
Tensor.as_strided_ = _as_strided_
as_strided_ = _function_of_method("as_strided_")
# ---- end in-place view ops ----


# ---- rest of issue 8: sampling, counting, factories ----
from . import _factories  # noqa: E402
from .ops import counting as _counting, sampling as _sampling  # noqa: E402

for _name in ("uniform_", "normal_", "cauchy_", "exponential_", "geometric_", "log_normal_",
              "random_", "bernoulli_"):
    setattr(Tensor, _name, getattr(_sampling, _name))
Tensor.bernoulli = _sampling.bernoulli
Tensor.multinomial = _sampling.multinomial
Tensor.unique = _counting.unique
Tensor.unique_consecutive = _counting.unique_consecutive
Tensor.bincount = _counting.bincount
Tensor.histc = _counting.histc
Tensor.histogram = _counting.histogram
Tensor.new_empty_strided = _factories.new_empty_strided
Tensor.resize_ = _factories.resize_
Tensor.resize_as_ = _factories.resize_as_
# ---- end rest of issue 8 ----

# ---- Tensor.as_subclass / Tensor.set_ ----
from .ops import storage_set as _storage_set  # noqa: E402

Tensor.as_subclass = _storage_set.as_subclass
Tensor.set_ = _storage_set.set_


# ---- constructing subclasses (Note [Torch function protocol] in _torch_function.py) ----
def _tensor_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``Tensor.__new__``: a subclass whose ``__init__`` takes its own arguments is built here
    (``super().__new__(cls, data)``), as PyTorch's constructor does: an alias of a tensor
    argument (``as_subclass``), else the legacy constructor's tensor. Otherwise
    ``Tensor.__init__`` builds it."""
    if cls is Tensor or cls.__init__ is Tensor.__init__:  # type: ignore[misc]
        return object.__new__(cls)
    if len(args) == 1 and not kwargs and isinstance(args[0], Tensor):
        return args[0].as_subclass(cls)
    t: Tensor = object.__new__(cls)
    Tensor.__init__(t, *args, **kwargs)
    return t


def _make_subclass(cls: type, data: Tensor, require_grad: bool = False, **kwargs: Any) -> Any:
    """``Tensor._make_subclass(cls, data, require_grad=False)``: a ``cls`` instance sharing
    ``data``'s memory and version counter, without its history (a leaf)."""
    if not isinstance(cls, type) or not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    if not isinstance(data, Tensor):
        raise TypeError(f"_make_subclass(): argument 'data' (position 2) must be Tensor, not "
                        f"{type(data).__name__}")
    t = object.__new__(cls)
    t._data = data._data
    if data._tborn:
        t._tborn = data._tborn
    if not data._inference:
        t._version_counter = data._vc()
    if require_grad:
        if _dtype._FROM_NP[data._data.dtype]._category < _dtype._FLOAT:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t._requires_grad = True
    return t


Tensor.__new__ = staticmethod(_tensor_new)
Tensor._make_subclass = staticmethod(_make_subclass)  # type: ignore[attr-defined]

# ---- shared memory (ndgrad/_shared_memory.py, Note [Shared memory]) and storages ----
Tensor.share_memory_ = _shared_memory.share_memory_
Tensor.is_shared = _shared_memory.is_shared
Tensor.untyped_storage = storage.untyped_storage
Tensor.storage = storage.storage


# ---- compat (session 22): torch's alias spellings and small Tensor predicates ----
from . import _compat_methods  # noqa: E402,F401  (binds them; ndgrad/_compat_methods.py)
# ---- end compat ----
