"""Tensor methods and operators, bound to the op table.

Note [Tensor methods live beside the op table]
``tensor.py`` holds the Tensor's state and autograd bookkeeping; this module attaches the math
(``x.exp()``, ``x + y``, ``x[i]`` ...) so that ``tensor.py`` does not import the ops it is used
by. Every method here is a one-line forward to ``ndgrad.ops``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype, ops
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
        elif t is float or t is int:
            ad = self._data
            if ad.dtype in _FAST_FLOATS:
                return _apply(ts, (self,), (ad,), (other,))
        return _pw._binary(self, other, tt, ts, name, true_div)
    method.__name__ = f"__{name}__"
    return method


def _rsub_method(self: Tensor, other: Any) -> Tensor:
    t = type(other)
    if (t is float or t is int) and self._data.dtype in _FAST_FLOATS:
        return _apply(_pw.RSUB_S, (self,), (self._data,), (other, 1))
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
        return ops.to(self, dt)
    conv.__name__ = dt.name
    conv.__doc__ = f"Cast to ``ndgrad.{dt.name}``."
    return conv


def _index_put(self: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    return ops.shape.index_put_indices(self, indices, values, accumulate)


def _new_factory(fn_name: str):
    def make(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, **kw: Any) -> Tensor:
        from . import _creation
        d = dtype if dtype is not None else self.dtype
        if fn_name == "full":
            return _creation.full(size[0], size[1], dtype=d, requires_grad=requires_grad)
        return getattr(_creation, fn_name)(*size, dtype=d, requires_grad=requires_grad)
    make.__name__ = "new_" + fn_name
    return make


def _new_tensor(self: Tensor, data: Any, dtype: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    from . import _creation
    return _creation.tensor(data, dtype=dtype if dtype is not None else self.dtype,
                            requires_grad=requires_grad)


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
    "__rtruediv__": _rtruediv,
    "__floordiv__": lambda s, o: ops.pointwise.floor_divide(s, o),
    "__rfloordiv__": lambda s, o: ops.pointwise.floor_divide(o, s),
    "floor_divide": lambda s, o: ops.pointwise.floor_divide(s, o),
    "__pow__": lambda s, o: ops.pow(s, o),
    "__rpow__": _rpow,
    "__matmul__": _matmul_op,
    "__rmatmul__": _rmatmul,
    "__neg__": lambda s: ops.neg(s),
    "__pos__": lambda s: s,
    "__abs__": lambda s: ops.abs(s),
    "__eq__": lambda s, o: ops.eq(s, o),
    "__ne__": lambda s, o: ops.ne(s, o),
    "__lt__": lambda s, o: ops.lt(s, o),
    "__le__": lambda s, o: ops.le(s, o),
    "__gt__": lambda s, o: ops.gt(s, o),
    "__ge__": lambda s, o: ops.ge(s, o),
    "__and__": lambda s, o: ops.bitwise_and(s, o),
    "__or__": lambda s, o: ops.bitwise_or(s, o),
    "__xor__": lambda s, o: ops.bitwise_xor(s, o),
    "__rand__": lambda s, o: ops.bitwise_and(s, o),
    "__ror__": lambda s, o: ops.bitwise_or(s, o),
    "__invert__": _invert,
    "__getitem__": lambda s, i: ops.getitem(s, i),
    "__setitem__": _setitem,
    "index_put": _index_put,
    "__iadd__": lambda s, o: _inplace.inplace_binary(s, o, np.add, lambda a, b: a + b),
    "__isub__": lambda s, o: _inplace.inplace_binary(s, o, np.subtract, lambda a, b: a - b),
    "__imul__": lambda s, o: _inplace.inplace_binary(s, o, np.multiply, lambda a, b: a * b),
    "__itruediv__": lambda s, o: _inplace.inplace_binary(s, o, np.true_divide,
                                                         lambda a, b: a / b),
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
    "clamp": lambda s, min=None, max=None: ops.clamp(s, min, max),
    "clip": lambda s, min=None, max=None: ops.clamp(s, min, max),
    "clamp_min": ops.clamp_min, "clamp_max": ops.clamp_max,
    "maximum": ops.maximum, "minimum": ops.minimum,
    "where": lambda s, condition, other: ops.where(condition, s, other),
    "masked_fill": ops.pointwise.masked_fill,
    "eq": ops.eq, "ne": ops.ne, "lt": ops.lt, "le": ops.le, "gt": ops.gt, "ge": ops.ge,
    "logical_not": ops.logical_not, "logical_and": ops.logical_and,
    "logical_or": ops.logical_or, "isnan": ops.isnan, "isinf": ops.isinf,
    "isfinite": ops.isfinite,
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
    # linear algebra
    "matmul": _tensor_arg_method(ops.matmul, "matmul", "other"),
    "mm": _tensor_arg_method(ops.mm, "mm", "mat2"),
    "bmm": _tensor_arg_method(ops.bmm, "bmm", "mat2"),
    "mv": _tensor_arg_method(ops.mv, "mv", "vec"),
    "dot": _tensor_arg_method(ops.dot, "dot", "tensor"),
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
    "type_as": lambda s, o: ops.to(s, o.dtype),
    "float": _type_conv(_dtype.float32), "double": _type_conv(_dtype.float64),
    "half": _type_conv(_dtype.float16), "bfloat16": _type_conv(_dtype.bfloat16),
    "long": _type_conv(_dtype.int64), "int": _type_conv(_dtype.int32),
    "bool": _type_conv(_dtype.bool), "cpu": lambda s: s,
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
    "zero_": _inplace.zero_, "fill_": _inplace.fill_, "copy_": _inplace.copy_,
    # factories
    "new_zeros": _new_factory("zeros"), "new_ones": _new_factory("ones"),
    "new_empty": _new_factory("empty"), "new_full": _new_factory("full"),
    "new_tensor": _new_tensor,
}

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)

Tensor.T = property(lambda s: s.permute(tuple(range(s.ndim - 1, -1, -1))))
Tensor.mT = property(lambda s: ops.transpose(s, -2, -1))
Tensor.real = property(lambda s: ops.shape.real(s))
Tensor.imag = property(lambda s: ops.shape.imag(s))
Tensor.diagonal = ops.shape.diagonal
Tensor.unfold = ops.shape.unfold
Tensor.as_strided = ops.shape.as_strided
