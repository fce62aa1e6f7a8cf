"""Tensor methods and operators, bound to the op table.

Note [Tensor methods live beside the op table]
``tensor.py`` holds the Tensor's state and autograd bookkeeping; this module attaches the math
(``x.exp()``, ``x + y``, ``x[i]`` ...) so that ``tensor.py`` does not import the ops it is used
by. Every method here is a one-line forward to ``ndgrad.ops``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype, _signature, ops
from .ops import views_inplace as _inplace
from .ops._util import check_tensor, is_scalar, to_tensor
from .tensor import Tensor


# Note [Operator fast paths]
# ``x * y`` and friends are the hottest calls in ndgrad (forward code and every backward rule).
# The common cases (same-dtype tensors; a float tensor with a Python int/float) go straight to
# ``apply``; everything else (promotion, conversion, errors) takes ``pointwise._binary``.
_pw = ops.pointwise
_FAST_FLOATS = frozenset(d.np for d in (_dtype.float16, _dtype.bfloat16, _dtype.float32,
                                        _dtype.float64))
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
        if t is list or t is tuple:     # Note [Operators refuse what PyTorch's refuse]
            return NotImplemented
        return _pw._binary(self, other, tt, ts, name, true_div)
    method.__name__ = f"__{name}__"
    return method


# Note [Operators refuse what PyTorch's refuse]
# An operator (``x * y``, ``x += y``, ``x == y`` ...) takes a Tensor, a number or an ndarray as
# its other operand; for anything else (a list, a tuple, None, a string) it returns
# NotImplemented as PyTorch's do, so Python raises its TypeError ("unsupported operand
# type(s)"), or compares identities for ``==``/``!=``. Python ints beyond 64 bits raise
# PyTorch's OverflowError. (``x + y`` and friends test only for lists and tuples: the general
# path they fall back to returns NotImplemented for other operand types itself.)
def _operand(other: Any) -> bool:
    t = type(other)
    if t is Tensor or t is float or t is bool:
        return True
    if t is int:
        return _signature._is_number(other)          # OverflowError beyond 64 bits
    return isinstance(other, (Tensor, np.ndarray, np.number, np.bool_, complex))


def _operator(fn: Any, name: str):
    """The operator method ``name`` calling ``fn(self, other)`` for the operands it takes."""
    def method(self: Tensor, other: Any) -> Any:
        if type(other) is not Tensor and not _operand(other):
            return NotImplemented
        return fn(self, other)
    method.__name__ = name
    return method


def _rsub_method(self: Tensor, other: Any) -> Tensor:
    t = type(other)
    if (t is float or t is int) and self._data.dtype in _FAST_FLOATS:
        return _apply(_pw.RSUB_S, (self,), (self._data,), (other, 1))
    if not _operand(other):
        return NotImplemented
    return ops.rsub(self, other)


def _invert(self: Tensor) -> Tensor:
    if self._data.dtype.kind in "fc":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return ops.bitwise_not(self)


def _rtruediv(self: Tensor, other: Any) -> Tensor:
    if is_scalar(other):
        return ops.reciprocal(self) * other          # PyTorch records MulBackward0 here
    return ops.div(to_tensor(other), self)


def _rpow(self: Tensor, other: Any) -> Tensor:
    if is_scalar(other):
        return ops.pow(other, self)
    return ops.pow(to_tensor(other), self)


def _rmatmul(self: Tensor, other: Any) -> Tensor:
    if not isinstance(other, np.ndarray):
        return NotImplemented          # PyTorch: TypeError "unsupported operand type(s) for @"
    return ops.matmul(to_tensor(other), self)


def _matmul_op(self: Tensor, other: Any) -> Tensor:
    if not isinstance(other, Tensor):
        if not isinstance(other, np.ndarray):
            return NotImplemented
        other = to_tensor(other)
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
        return ops.to(self, dt, memory_format=memory_format)
    conv.__name__ = dt.name
    conv.__doc__ = f"Cast to ``ndgrad.{dt.name}``."
    return conv


# Tensor.type(): PyTorch's legacy type strings, which programs compare against
# (``x.type() == 'torch.FloatTensor'``); ``type(s)`` accepts them and the ``ndgrad.`` spellings.
_TYPE_NAMES = {d.np: f"torch.{d._torch_name}Tensor" for d in _dtype._ALL}
_TYPES_BY_NAME = {f"{lib}.{d._torch_name}Tensor": d for d in _dtype._ALL
                  for lib in ("torch", "ndgrad")}


def _type(self: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """With no ``dtype``, the type string (``'torch.FloatTensor'``); else a cast to ``dtype``
    (an ndgrad dtype or a type string), ``self`` if it already has that type."""
    for k in kwargs:
        if k != "async":
            raise TypeError(f"type() got an unexpected keyword argument '{k}'")
    if dtype is None:
        return _TYPE_NAMES[self._data.dtype]
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
    elif isinstance(dtype, type):
        raise ValueError(f"invalid type: '{dtype.__name__}'")
    else:
        raise TypeError("dtype must be a type, str, or dtype object")
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


def _new_factory(fn_name: str):
    def make(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, **kw: Any) -> Tensor:
        from . import _creation
        d = dtype if dtype is not None else self.dtype
        if fn_name == "full":
            return _creation.full(size[0], size[1], dtype=d, device=device,
                                  requires_grad=requires_grad)
        return getattr(_creation, fn_name)(*size, dtype=d, device=device,
                                           requires_grad=requires_grad)
    make.__name__ = "new_" + fn_name
    return make


def _new_tensor(self: Tensor, data: Any, dtype: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    from . import _creation
    return _creation.tensor(data, dtype=dtype if dtype is not None else self.dtype,
                            device=device, requires_grad=requires_grad)


def _max(self: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return ops.max(self, dim, keepdim)


def _min(self: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return ops.min(self, dim, keepdim)


_METHODS = {
    # operators
    "__add__": _fast_binary(_pw.ADD, _pw.ADD_S, "add"),
    "__radd__": _fast_binary(_pw.ADD, _pw.ADD_S, "add"),
    "__sub__": _fast_binary(_pw.SUB, _pw.SUB_S, "sub"),
    "__rsub__": _rsub_method,
    "__mul__": _fast_binary(_pw.MUL, _pw.MUL_S, "mul"),
    "__rmul__": _fast_binary(_pw.MUL, _pw.MUL_S, "mul"),
    "__truediv__": _fast_binary(_pw.DIV, _pw.DIV_S, "div", True),
    "__rtruediv__": _operator(_rtruediv, "__rtruediv__"),
    "__floordiv__": _operator(lambda s, o: ops.pointwise.floor_divide(s, o), "__floordiv__"),
    "__rfloordiv__": _operator(lambda s, o: ops.pointwise.floor_divide(o, s), "__rfloordiv__"),
    "floor_divide": lambda s, o: ops.pointwise.floor_divide(s, o),
    "__pow__": _operator(lambda s, o: ops.pow(s, o), "__pow__"),
    "__rpow__": _operator(_rpow, "__rpow__"),
    "__matmul__": _matmul_op,
    "__rmatmul__": _operator(_rmatmul, "__rmatmul__"),
    "__neg__": lambda s: ops.neg(s),
    "__pos__": lambda s: s,
    "__abs__": lambda s: ops.abs(s),
    "__eq__": _operator(lambda s, o: ops.eq(s, o), "__eq__"),
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
    "__getitem__": lambda s, i: ops.getitem(s, i),
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
    "logical_or": ops.logical_or, "isnan": ops.isnan, "isinf": ops.isinf,
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
    "unbind": ops.unbind, "split": ops.split, "chunk": ops.chunk,
    "contiguous": ops.contiguous, "clone": ops.clone, "to": ops.to,
    "type_as": lambda s, o: ops.to(s, o.dtype), "type": _type,
    "triu": ops.triu, "tril": ops.tril,
    "float": _type_conv(_dtype.float32), "double": _type_conv(_dtype.float64),
    "half": _type_conv(_dtype.float16), "bfloat16": _type_conv(_dtype.bfloat16),
    "long": _type_conv(_dtype.int64), "int": _type_conv(_dtype.int32),
    "bool": _type_conv(_dtype.bool),
    "cpu": lambda s, memory_format=None: ops.to(s, memory_format=memory_format),
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
    # factories
    "new_zeros": _new_factory("zeros"), "new_ones": _new_factory("ones"),
    "new_empty": _new_factory("empty"), "new_full": _new_factory("full"),
    "new_tensor": _new_tensor,
}

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
