"""The binary math family: atan2, remainder/fmod, hypot, fmax/fmin, copysign, xlogy/xlog1py,
logaddexp/logaddexp2, lerp, addcmul/addcdiv, ldexp, float_power, heaviside, nextafter, rsub,
frexp, complex/polar, bit shifts, gcd/lcm.

One ``Op`` declaration per op and operand form (Note [One declaration per op] in
ops/_dispatch.py): PyTorch records a different node for ``remainder(x, y)``
(``RemainderBackward1``) and ``remainder(x, 2.0)`` (``RemainderBackward0``), so the tensor-scalar
forms are their own entries with the Python number among the arguments. The VJP of such a form
is the tensor-tensor rule with the number as a constant 0-d tensor. The public functions
promote dtypes as PyTorch does (a Python number takes part as a wrapped number) and raise its
errors for the dtypes it refuses.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, -1.0], requires_grad=True)
    >>> ndgrad.atan2(x, ndgrad.tensor([1.0, 1.0])).sum().backward()
    >>> x.grad
    tensor([0.5000, 0.5000])
"""

from __future__ import annotations

import math
from .. import return_types as _rt
from typing import Any, Callable, Optional

import numpy as np

from .. import _dtype, _unsigned
from ..tensor import Tensor, _wrap
from . import pointwise as _pw
from ._batching import call as _bcall
from ._batching import marked as _bmarked
from ._dispatch import Op, apply
from ._jvp import not_implemented, zero
from ._util import as_scalar, promote_pair, promote_scalar, scalar_operand, to_float

__all__ = ["atan2", "arctan2", "remainder", "fmod", "hypot", "fmax", "fmin", "copysign",
           "xlogy", "xlog1py", "logaddexp", "logaddexp2", "lerp", "addcmul", "addcdiv", "ldexp",
           "float_power", "heaviside", "nextafter", "true_divide", "rsub", "frexp", "complex",
           "polar", "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "logical_xor",
           "bitwise_and", "bitwise_or", "bitwise_xor"]

_c = _pw._c
_pycomplex = complex
_zeros_of = _pw._zeros_of
_where = _pw.where
_LN2 = math.log(2.0)
_LOW = _dtype.HALF_NP
_F32 = np.dtype(np.float32)


def _const(s: Any, like: Tensor) -> Tensor:
    """The Python number ``s`` as a 0-d tensor of ``like``'s dtype (outside the graph)."""
    return _wrap(np.asarray(s, dtype=like._data.dtype))


def _arr(s: Any, a: np.ndarray) -> np.ndarray:
    return np.asarray(s, dtype=a.dtype)


def _in_float32(f: Callable) -> Callable:
    """``f`` on float16/bfloat16 arrays computed in float32 and rounded back (NumPy has no
    such loops for some ufuncs, and ml_dtypes' bfloat16 widens)."""
    def fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        # both operands have the result dtype already
        if a.dtype in _LOW:
            return np.asarray(f(a.astype(np.float32), np.asarray(b).astype(np.float32))).astype(
                a.dtype)
        return np.asarray(f(a, b)).astype(a.dtype, copy=False)
    return fwd


def _scalar_form(f: Callable) -> Callable:
    """The forward of a tensor-scalar form: ``f(array, number as a 0-d array)``."""
    def fwd(a: np.ndarray, s: Any) -> np.ndarray:
        return f(a, _arr(s, a))
    return fwd


def _rscalar_form(f: Callable) -> Callable:
    """The forward of a scalar-tensor form (the number is the first operand)."""
    def fwd(b: np.ndarray, s: Any) -> np.ndarray:
        return f(_arr(s, b), b)
    return fwd


def _vjp(rule: Callable, saved: Callable) -> Callable:
    """A tensor-tensor VJP from ``rule(a, b, g, need_a, need_b) -> (ga, gb)``."""
    def vjp(ctx, g):
        a, b = saved(ctx)
        return rule(a, b, g, ctx.needs_input_grad(0), ctx.needs_input_grad(1))
    return vjp


def _vjp_s(rule: Callable, saved: Callable) -> Callable:
    """The VJP of the tensor-scalar form (the number is a constant)."""
    def vjp(ctx, g):
        a = saved(ctx)
        return rule(a, _const(ctx._args[0], g if a is None else a), g, True, False)[0]
    return vjp


def _vjp_rs(rule: Callable, saved: Callable) -> Callable:
    """The VJP of the scalar-tensor form (the tensor is the second operand)."""
    def vjp(ctx, g):
        b = saved(ctx)
        return rule(_const(ctx._args[0], b), b, g, False, True)[1]
    return vjp


def _jvp(rule: Callable) -> Callable:
    """A tensor-tensor JVP from ``rule(a, b, result, ta, tb)`` (a missing tangent is None)."""
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        return rule(a, b, ctx.result, ta, tb)
    return jvp


def _jvp_s(rule: Callable) -> Callable:
    def jvp(ctx, t):
        a = ctx.inputs[0]
        return rule(a, _const(ctx._args[0], a), ctx.result, t, None)
    return jvp


def _jvp_rs(rule: Callable) -> Callable:
    def jvp(ctx, t):
        b = ctx.inputs[0]
        return rule(_const(ctx._args[0], b), b, ctx.result, None, t)
    return jvp


def _sum(*parts: Optional[Tensor]) -> Optional[Tensor]:
    out = None
    for p in parts:
        if p is not None:
            out = p if out is None else out + p
    return out


def _no_derivative(name: str) -> Callable:
    def vjp(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return vjp


def _self_other(ctx) -> tuple:
    other, self = ctx.saved
    return self, other


# ---------------------------------------------------------------------------- atan2
def _atan2_grads(a, b, g, need_a, need_b):
    d = a * a + b * b
    r = _where(d == 0, 0.0, 1 / d)
    return (g * (b * r) if need_a else None, g * (-a * r) if need_b else None)


def _atan2_tangent(a, b, res, ta, tb):
    r = 1 / (a * a + b * b)        # NaN tangents at the origin, as PyTorch's forward mode
    return _sum(ta * (b * r) if ta is not None else None,
                tb * (-a * r) if tb is not None else None)


def _atan2_fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # float32 and below through float64, so that results are correctly rounded like PyTorch's
    if a.dtype.kind == "f" and a.dtype.itemsize < 8 or a.dtype == _dtype.bfloat16.np:
        return np.arctan2(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    return np.arctan2(a, b)


ATAN2 = Op("atan2", "Atan2Backward0", _atan2_fwd, _vjp(_atan2_grads, _self_other),
           saves=("other", "self"), inputs=("self", "other"), jvp=_jvp(_atan2_tangent))


# ---------------------------------------------------------------------------- remainder / fmod
def _remainder_fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return np.remainder(a, b)
    m = np.fmod(a, b)
    fix = (m != 0) & ((b < 0) != (m < 0))
    return np.where(fix, m + b, m).astype(m.dtype, copy=False)


def _rounded_grads(mode: str) -> Callable:
    def rule(a, b, g, need_a, need_b):
        gb = None
        if need_b:
            gb = -g * _pw.div(a, b, rounding_mode=mode)
        return (g if need_a else None, gb)
    return rule


def _rounded_tangent(mode: str) -> Callable:
    def rule(a, b, res, ta, tb):
        return _sum(ta, -tb * _pw.div(a, b, rounding_mode=mode) if tb is not None else None)
    return rule


REMAINDER = Op("remainder", "RemainderBackward1", _remainder_fwd,
               _vjp(_rounded_grads("floor"), _self_other), saves=("other", "self"),
               save_if=((1,), (1,)), inputs=("self", "other"),
               jvp=_jvp(_rounded_tangent("floor")))
REMAINDER_S = Op("remainder", "RemainderBackward0", _scalar_form(_remainder_fwd),
                 lambda ctx, g: g, args=("other",), jvp=lambda ctx, t: t)
REMAINDER_RS = Op("remainder", "NotImplemented", _rscalar_form(_remainder_fwd),
                  _no_derivative("remainder"), args=("self",),
                  jvp=not_implemented("aten::remainder"),
                  full_name="torch::autograd::NotImplemented")
FMOD = Op("fmod", "FmodBackward1", np.fmod, _vjp(_rounded_grads("trunc"), _self_other),
          saves=("other", "self"), save_if=((1,), (1,)), inputs=("self", "other"),
          jvp=_jvp(_rounded_tangent("trunc")))
FMOD_S = Op("fmod", "FmodBackward0", _scalar_form(np.fmod), lambda ctx, g: g, args=("other",),
            jvp=lambda ctx, t: t)


# ---------------------------------------------------------------------------- hypot
def _hypot_vjp(ctx, g):
    b, a, r = ctx.saved
    return (g * (a / r) if ctx.needs_input_grad(0) else None,
            g * (b / r) if ctx.needs_input_grad(1) else None)


HYPOT = Op("hypot", "HypotBackward0", _in_float32(np.hypot), _hypot_vjp,
           saves=("other", "self", "result"), save_if=((1,), (0,), None),
           inputs=("self", "other"),
           jvp=_jvp(lambda a, b, r, ta, tb: _sum(ta * (a / r) if ta is not None else None,
                                                  tb * (b / r) if tb is not None else None)))


# ---------------------------------------------------------------------------- fmax / fmin
def _fminmax_mask(a: Tensor, b: Tensor, is_max: bool) -> Tensor:
    """Where the result is ``a``: ``a`` wins or ties, or ``b`` is NaN."""
    return ((a >= b) if is_max else (a <= b)).logical_or(_pw.isnan(b))


def _fminmax_rule(is_max: bool) -> Callable:
    def rule(a, b, g, need_a, need_b):
        m = _fminmax_mask(a, b, is_max)
        return (_where(m, g, 0.0) if need_a else None, _where(m, 0.0, g) if need_b else None)
    return rule


def _fminmax_tangent(is_max: bool) -> Callable:
    # PyTorch's forward mode of fmax gives ties to ``other`` (its backward, and fmin, to
    # ``self``)
    def rule(a, b, res, ta, tb):
        m = ((a > b) if is_max else (a <= b)).logical_or(_pw.isnan(b))
        return _sum(_where(m, ta, 0.0) if ta is not None else None,
                    _where(m, 0.0, tb) if tb is not None else None)
    return rule


def _fminmax_fwd(is_max: bool) -> Callable:
    # ``a`` where it wins or ties (fmax(0.0, -0.0) is 0.0, fmax(-0.0, 0.0) is -0.0) or b is NaN
    def fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        keep = (a >= b) if is_max else (a <= b)
        if a.dtype.kind in "fc":
            keep = keep | np.isnan(b)
        return np.where(keep, a, b)
    return fwd


FMAX = Op("fmax", "FmaxBackward0", _fminmax_fwd(True), _vjp(_fminmax_rule(True), _self_other),
          saves=("other", "self"), inputs=("self", "other"), jvp=_jvp(_fminmax_tangent(True)))
FMIN = Op("fmin", "FminBackward0", _fminmax_fwd(False), _vjp(_fminmax_rule(False), _self_other),
          saves=("other", "self"), inputs=("self", "other"), jvp=_jvp(_fminmax_tangent(False)))


# ---------------------------------------------------------------------------- copysign
def _copysign_deriv(x: Tensor, result: Tensor) -> Tensor:
    """d copysign(x, y) / dx: +-1, 0 at x = 0 (PyTorch's choice)."""
    return _where(x == 0, 0.0, result / x)   # (0/0 at x = 0: NaN second derivatives there,
                                              # as PyTorch's)


def _copysign_vjp(ctx, g):
    x, r = ctx.saved
    ga = g * _copysign_deriv(x, r) if ctx.needs_input_grad(0) else None
    if len(ctx.next_functions) == 1:
        return ga
    return ga, (_zeros_of(g) if ctx.needs_input_grad(1) else None)


def _copysign_jvp(ctx, ta, tb=None):
    if ta is None:
        return _zeros_of(ctx.result)
    return ta * _copysign_deriv(ctx.inputs[0], ctx.result)


COPYSIGN = Op("copysign", "CopysignBackward0", _in_float32(np.copysign), _copysign_vjp,
              saves=("self", "result"), save_if=((0,), None), inputs=("self", "other"),
              jvp=_copysign_jvp)
COPYSIGN_S = Op("copysign", "CopysignBackward1", _scalar_form(_in_float32(np.copysign)),
                _copysign_vjp, saves=("self", "result"), args=("other",), jvp=_copysign_jvp)


# ---------------------------------------------------------------------------- xlogy / xlog1py
def _xlogy_fwd(log: Callable) -> Callable:
    def fwd(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = x * log(y)
        return np.where((x == 0) & ~np.isnan(y), np.zeros((), r.dtype), r).astype(
            r.dtype, copy=False)
    return fwd


_XLOGY = _xlogy_fwd(np.log)
_XLOG1PY = _xlogy_fwd(np.log1p)


def _xlogy_rule(one: float) -> Callable:
    """``xlogy`` (``one`` = 0) and ``xlog1py`` (``one`` = 1): d/dx = log(y + one), 0 where
    x == 0 and y + one <= 0; d/dy = x / (y + one)."""
    def rule(a, b, g, need_a, need_b):
        ga = gb = None
        if need_a:
            f = xlogy if one == 0 else xlog1py
            ga = _where((a == 0).logical_and(b <= -one), 0.0, f(g, b))
        if need_b:
            gb = g * a / (b + one if one else b)
        return ga, gb
    return rule


def _xlogy_tangent(one: float) -> Callable:
    def rule(a, b, res, ta, tb):
        f = xlogy if one == 0 else xlog1py
        return _sum(
            _where((a == 0).logical_and(b <= -one), 0.0, f(ta, b)) if ta is not None else None,
            tb * a / (b + one if one else b) if tb is not None else None)
    return rule


def _xlogy_ops(name: str, node: str, fwd: Callable, one: float) -> tuple:
    rule, tangent = _xlogy_rule(one), _xlogy_tangent(one)
    tt = Op(name, node + "0", fwd, _vjp(rule, _self_other), saves=("other", "self"),
            inputs=("self", "other"), jvp=_jvp(tangent))
    # the number first (``xlogy(2, y)``): the tensor is ``other``
    rs = Op(name, node + "1", _rscalar_form(fwd), _vjp_rs(rule, lambda ctx: ctx.saved[0]),
            saves=("other", "self"), inputs=("other",), args=("self",), jvp=_jvp_rs(tangent))
    ts = Op(name, node + "2", _scalar_form(fwd), _vjp_s(rule, lambda ctx: ctx.saved[0]),
            saves=("self", "other"), args=("other",), jvp=_jvp_s(tangent))
    return tt, ts, rs


XLOGY, XLOGY_S, XLOGY_RS = _xlogy_ops("xlogy", "XlogyBackward", _XLOGY, 0.0)
XLOG1PY, XLOG1PY_S, XLOG1PY_RS = _xlogy_ops("special_xlog1py", "SpecialXlog1PyBackward",
                                            _XLOG1PY, 1.0)


# ---------------------------------------------------------------------------- logaddexp
def _logaddexp_fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "c":
        return _in_float32(np.logaddexp)(a, b)
    # complex: m + log(1 + exp(other - m)) around the operand with the larger real part
    first = a.real >= b.real
    m = np.where(first, a, b)
    o = np.where(first, b, a)
    with np.errstate(all="ignore"):
        r = m + np.log1p(np.exp(o - m))
    both_inf = np.isinf(a.real) & (a == b)
    return np.where(both_inf, a, r).astype(a.dtype, copy=False)


def _logaddexp_rule(exp: Callable) -> Callable:
    def rule(a, b, g, need_a, need_b):
        return (g * _c(1 / (1 + exp(b - a))) if need_a else None,
                g * _c(1 / (1 + exp(a - b))) if need_b else None)
    return rule


def _logaddexp_tangent(exp: Callable) -> Callable:
    def rule(a, b, res, ta, tb):
        return _sum(ta / (1 + exp(b - a)) if ta is not None else None,
                    tb / (1 + exp(a - b)) if tb is not None else None)
    return rule


def _exp2(t: Tensor) -> Tensor:
    from .unary import exp2
    return exp2(t)


LOGADDEXP = Op("logaddexp", "LogaddexpBackward0", _logaddexp_fwd,
               _vjp(_logaddexp_rule(_pw.exp), _self_other), saves=("other", "self"),
               inputs=("self", "other"), jvp=_jvp(_logaddexp_tangent(_pw.exp)))
LOGADDEXP2 = Op("logaddexp2", "Logaddexp2Backward0", _in_float32(np.logaddexp2),
                _vjp(_logaddexp_rule(_exp2), _self_other), saves=("other", "self"),
                inputs=("self", "other"), jvp=_jvp(_logaddexp_tangent(_exp2)))


# ---------------------------------------------------------------------------- lerp
def _lerp_fwd(a: np.ndarray, b: np.ndarray, w: Any) -> np.ndarray:
    dt = a.dtype
    if dt in _LOW:       # float16/bfloat16 are interpolated in float32, as PyTorch does
        a, b = a.astype(np.float32), b.astype(np.float32)
        w = w.astype(np.float32) if isinstance(w, np.ndarray) else w
    w = np.asarray(w, dtype=a.dtype) if not isinstance(w, np.ndarray) else w
    d = b - a
    if dt == _F32:    # fused multiply-adds (one rounding), as PyTorch's kernel
        f64 = np.float64
        lo = a.astype(f64) + w.astype(f64) * d.astype(f64)
        hi = b.astype(f64) - d.astype(f64) * (1 - w).astype(f64)
        return np.where(np.abs(w) < 0.5, lo, hi).astype(dt)
    r = np.where(np.abs(w) < 0.5, a + w * d, b - d * (1 - w))
    return r.astype(dt, copy=False)


def _lerp_s_vjp(ctx, g):
    w = ctx.saved[0]
    wc = w.conjugate() if isinstance(w, _pycomplex) else w
    return (g * (1 - wc) if ctx.needs_input_grad(0) else None,
            g * wc if ctx.needs_input_grad(1) else None)


def _lerp_s_jvp(ctx, ta, tb):
    w = ctx._args[0]
    return _sum(ta * (1 - w) if ta is not None else None, tb * w if tb is not None else None)


def _lerp_t_vjp(ctx, g):
    end, self, w = ctx.saved
    return (g * _c(1 - w) if ctx.needs_input_grad(0) else None,
            g * _c(w) if ctx.needs_input_grad(1) else None,
            g * _c(end - self) if ctx.needs_input_grad(2) else None)


def _lerp_t_jvp(ctx, ta, tb, tw):
    a, b, w = ctx.inputs
    return _sum(ta * (1 - w) if ta is not None else None, tb * w if tb is not None else None,
                tw * (b - a) if tw is not None else None)


LERP_S = Op("lerp", "LerpBackward0", _lerp_fwd, _lerp_s_vjp, saves=("weight",),
            inputs=("self", "end"), args=("weight",), jvp=_lerp_s_jvp)
LERP_T = Op("lerp", "LerpBackward1", _lerp_fwd, _lerp_t_vjp, saves=("end", "self", "weight"),
            save_if=((2,), (2,), None), inputs=("self", "end", "weight"), jvp=_lerp_t_jvp)


# ---------------------------------------------------------------------------- addcmul / addcdiv
def _opmath(f: Callable) -> Callable:
    """float16/bfloat16 computed in float32 and rounded once, as PyTorch's kernels do."""
    def fwd(x, t1, t2, value):
        if x.dtype in _LOW:
            f32 = np.float32
            return f(x.astype(f32), t1.astype(f32), t2.astype(f32), value).astype(x.dtype)
        return f(x, t1, t2, value)
    return fwd


@_opmath
def _addcmul_fwd(x, t1, t2, value):
    vt1 = _arr(value, x) * t1
    if x.dtype == _F32:    # a fused multiply-add (one rounding), as PyTorch's kernel
        f64 = np.float64
        return (vt1.astype(f64) * t2.astype(f64) + x.astype(f64)).astype(x.dtype)
    return (x + vt1 * t2).astype(x.dtype, copy=False)


@_opmath
def _addcdiv_fwd(x, t1, t2, value):
    return (x + _arr(value, x) * t1 / t2).astype(x.dtype, copy=False)


def _cvalue(v: Any) -> Any:
    return v.conjugate() if isinstance(v, _pycomplex) else v


def _addcmul_vjp(ctx, g):
    t1, t2, value = ctx.saved
    v = _cvalue(value)
    return (g if ctx.needs_input_grad(0) else None,
            g * _c(t2) * v if ctx.needs_input_grad(1) else None,
            g * _c(t1) * v if ctx.needs_input_grad(2) else None)


def _addcmul_jvp(ctx, tx, t1t, t2t):
    _, t1, t2 = ctx.inputs
    v = ctx._args[0]
    return _sum(tx, t1t * t2 * v if t1t is not None else None,
                t2t * t1 * v if t2t is not None else None)


def _addcdiv_vjp(ctx, g):
    t1, t2, value = ctx.saved
    v = _cvalue(value)
    g1 = g2 = None
    if ctx.needs_input_grad(1):
        g1 = g * v / _c(t2)
    if ctx.needs_input_grad(2):
        c2 = _c(t2)
        g2 = -g * v * _c(t1) / (c2 * c2)
    return (g if ctx.needs_input_grad(0) else None, g1, g2)


def _addcdiv_jvp(ctx, tx, t1t, t2t):
    _, t1, t2 = ctx.inputs
    v = ctx._args[0]
    return _sum(tx, t1t * v / t2 if t1t is not None else None,
                -t2t * v * t1 / (t2 * t2) if t2t is not None else None)


ADDCMUL = Op("addcmul", "AddcmulBackward0", _addcmul_fwd, _addcmul_vjp,
             saves=("tensor1", "tensor2", "value"), save_if=((2,), (1,), None),
             inputs=("self", "tensor1", "tensor2"), args=("value",), jvp=_addcmul_jvp)
ADDCDIV = Op("addcdiv", "AddcdivBackward0", _addcdiv_fwd, _addcdiv_vjp,
             saves=("tensor1", "tensor2", "value"), save_if=((2,), None, None),
             inputs=("self", "tensor1", "tensor2"), args=("value",), jvp=_addcdiv_jvp)


# ---------------------------------------------------------------------------- ldexp
def _ldexp_fwd(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    return (a * np.exp2(e.astype(a.dtype))).astype(a.dtype, copy=False)


def _ldexp_vjp(ctx, g):
    e, r = ctx.saved
    ga = gb = None
    if ctx.needs_input_grad(0):
        # an integer exponent: PyTorch's integer 2 ** e (0 for negative e)
        ga = g * (_pw.pow(2, e) if e._data.dtype.kind in "iu" else _exp2(e))
    if ctx.needs_input_grad(1):
        gb = g * _c(r * _LN2)
    return ga, gb


def _ldexp_jvp(ctx, ta, tb):
    a, e = ctx.inputs
    return _sum(ta * (_pw.pow(2, e) if e._data.dtype.kind in "iu" else _exp2(e))
                if ta is not None else None,
                tb * (ctx.result * _LN2) if tb is not None else None)


LDEXP = Op("ldexp", "LdexpBackward0", _ldexp_fwd, _ldexp_vjp, saves=("other", "result"),
           save_if=((0,), None), inputs=("self", "other"), jvp=_ldexp_jvp)


# ---------------------------------------------------------------------------- nextafter
def _nextafter_fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype != _dtype.bfloat16.np:
        return np.nextafter(a, b)
    # bfloat16: one step of the bit pattern towards b
    bits = a.view(np.uint16).astype(np.int32)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    up = (fb > fa) == (fa >= 0)            # away from zero when moving outwards
    step = np.where(fa == 0, 1, np.where(up, 1, -1))
    zero_bits = np.where(fb > 0, 1, 0x8001)   # the smallest subnormal of b's sign
    out = np.where(fa == 0, zero_bits, bits + step)
    out = np.where((fa == fb) | np.isnan(fa) | np.isnan(fb), bits, out)
    r = out.astype(np.uint16).view(a.dtype)
    r = np.where(np.isnan(fb) & ~np.isnan(fa), fb.astype(a.dtype), r)
    return np.where(fa == fb, b, r).astype(a.dtype, copy=False)


def _nextafter_vjp(ctx, g):
    # PyTorch's convention: the gradient passes to ``self`` except where self == other
    # (there the result is ``other``); ``other`` gets zeros
    other, self = ctx.saved
    return (_where(self == other, 0.0, g) if ctx.needs_input_grad(0) else None,
            _zeros_of(g) if ctx.needs_input_grad(1) else None)


def _nextafter_jvp(ctx, ta, tb):
    a, b = ctx.inputs
    return _where(a == b, 0.0, ta) if ta is not None else _zeros_of(ctx.result)


NEXTAFTER = Op("nextafter", "NextafterBackward0", _nextafter_fwd, _nextafter_vjp,
               saves=("other", "self"), save_if=((0,), (0,)), inputs=("self", "other"),
               jvp=_nextafter_jvp)


# ---------------------------------------------------------------------------- heaviside
def _heaviside_fwd(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.where(x == 0, v, (x > 0).astype(x.dtype)).astype(x.dtype, copy=False)


HEAVISIDE = Op("heaviside", "NotImplemented", _heaviside_fwd, _no_derivative("heaviside"),
               inputs=("self", "values"), jvp=not_implemented("aten::heaviside"),
               full_name="torch::autograd::NotImplemented")


# ---------------------------------------------------------------------------- rsub
def _rsub_fwd(a, b, alpha=1):
    return b - a if alpha == 1 else b - a * alpha


def _rsub_vjp(ctx, g):
    alpha = ctx.saved[0]
    return (-g if alpha == 1 else g * (-_cvalue(alpha)), g)


RSUB = Op("rsub", "RsubBackward0", _rsub_fwd, _rsub_vjp, saves=("alpha",),
          inputs=("self", "other"), args=("alpha",),
          jvp=lambda ctx, ta, tb: _sum(
              (-ta if ctx._args[0] == 1 else ta * (-ctx._args[0])) if ta is not None else None,
              tb))


# ---------------------------------------------------------------------------- frexp
def _frexp_mantissa(x: np.ndarray, exponent: Tensor) -> np.ndarray:
    if x.dtype in _LOW:
        return np.frexp(x.astype(np.float32))[0].astype(x.dtype)
    return np.frexp(x)[0]


FREXP = Op("frexp", "FrexpBackward0", _frexp_mantissa,
           lambda ctx, g: g / _exp2(ctx.saved[0].to(_dtype._FROM_NP[g._data.dtype])),
           saves=("exponent",), args=("exponent",),
           jvp=lambda ctx, t: t / _exp2(ctx._args[0].to(_dtype._FROM_NP[t._data.dtype])))


# ---------------------------------------------------------------------------- complex / polar
_COMPLEX_OF: dict = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}


def _complex_fwd(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(re.shape, im.shape), _COMPLEX_OF[re.dtype])
    out.real = re
    out.imag = im
    return out


def _polar_fwd(r: np.ndarray, theta: np.ndarray) -> np.ndarray:
    return _complex_fwd(r * np.cos(theta), r * np.sin(theta))


def _real(t: Tensor) -> Tensor:
    from .shape import real
    return real(t)


def _imag(t: Tensor) -> Tensor:
    from .shape import imag
    return imag(t)


def _complex_jvp(ctx, tr, ti):
    re, im = ctx.inputs
    return complex(tr if tr is not None else _zeros_of(re), ti if ti is not None else
                   _zeros_of(im))


COMPLEX = Op("complex", "ComplexBackward0", _complex_fwd,
             lambda ctx, g: (_real(g) if ctx.needs_input_grad(0) else None,
                             _imag(g) if ctx.needs_input_grad(1) else None),
             saves=("imag", "real"), save_if=((1,), (0,)), inputs=("real", "imag"),
             jvp=_complex_jvp)


def _unit(z: Tensor) -> Tensor:
    """``z / |z|`` (0 at 0), the direction of the polar result."""
    m = _pw.abs(z)
    return _where(m == 0, 0.0, z / _where(m == 0, 1.0, m))


def _polar_vjp(ctx, g):
    (z,) = ctx.saved
    gc = g.conj()
    return (_real(gc * _unit(z)) if ctx.needs_input_grad(0) else None,
            _real(gc * z * 1j) if ctx.needs_input_grad(1) else None)


def _polar_jvp(ctx, tr, tt):
    z = ctx.result
    th = ctx.inputs[1]
    # forward mode uses exp(i angle) itself (the VJP uses sgn(result), as PyTorch's)
    return _sum(tr * complex(_pw.cos(th), _pw.sin(th)) if tr is not None else None,
                tt * (z * 1j) if tt is not None else None)


POLAR = Op("polar", "PolarBackward0", _polar_fwd, _polar_vjp, saves=("result",),
           inputs=("abs", "angle"), jvp=_polar_jvp)

BINARY_OPS = (ATAN2, REMAINDER, REMAINDER_S, REMAINDER_RS, FMOD, FMOD_S, HYPOT, FMAX, FMIN,
              COPYSIGN, COPYSIGN_S, XLOGY, XLOGY_S, XLOGY_RS, XLOG1PY, XLOG1PY_S, XLOG1PY_RS,
              LOGADDEXP, LOGADDEXP2, LERP_S, LERP_T, ADDCMUL, ADDCDIV, LDEXP, NEXTAFTER,
              HEAVISIDE, RSUB, FREXP, COMPLEX, POLAR)


# ---------------------------------------------------------------------------- public functions
def _name_of(d: np.dtype) -> str:
    return _dtype._FROM_NP[d]._torch_name


def _kernel(kernel: Optional[str], arr: np.ndarray, kinds: str) -> None:
    if kernel is not None:
        _pw._not_implemented_for(kernel, arr, kinds)


def _check_shapes(a: np.ndarray, b: np.ndarray) -> None:
    _pw._check_broadcast(a.shape, b.shape)


def _zero_division(a: np.ndarray, b: Any) -> None:
    """PyTorch's integer division by zero (after the shapes broadcast)."""
    if a.dtype.kind in "iu" and np.size(b) and (np.asarray(b) == 0).any() and \
            np.broadcast_shapes(a.shape, np.shape(b)).count(0) == 0:
        raise RuntimeError("ZeroDivisionError")


def _with_number(arr: np.ndarray, s: Any, floats: bool) -> tuple:
    """``(array, number)`` in the result dtype; with ``floats`` an integer result becomes the
    default float dtype before the number is converted (``xlogy(300, uint8)`` keeps 300)."""
    if floats:
        arr = to_float(promote_scalar(arr, s))
    arr, s = scalar_operand(arr, s)
    return arr, _dtype.number_in(s, arr.dtype)   # float16/bfloat16: as torch casts it


def _two_numbers(name: str, input: Any, other: Any) -> TypeError:
    """PyTorch's refusal of two numbers (its overloads all take a Tensor)."""
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({type(input).__name__}, {type(other).__name__}), but expected one of:\n"
                     " * (Tensor input, Tensor other)\n * (Number self, Tensor other)\n"
                     " * (Tensor input, Number other)")


def _binary_op(name: str, input: Any, other: Any, tt: Op, ts: Optional[Op] = None,
               rs: Optional[Op] = None, *, floats: bool = False, kernel: Optional[str] = None,
               kinds: str = "", check: Optional[Callable] = None) -> Tensor:
    """Dispatch ``name(input, other)``: tensor-tensor (``tt``), tensor-number (``ts``) or
    number-tensor (``rs``). ``floats``: integer and bool results become the default float
    dtype. ``kernel``/``kinds``: PyTorch has no kernel for those result dtype kinds.
    ``check(a, b)`` runs on the final arrays (value checks such as integer division by 0)."""
    if _bmarked((input, other)):  # Note [Batched backward]
        r = _bcall(_binary_op, name, input, other, tt, ts, rs, floats=floats, kernel=kernel,
                   kinds=kinds, check=check)
        if r is not NotImplemented:
            return r
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        ad, bd = promote_pair(input, other)
        _check_shapes(ad, bd)
        if floats:
            ad, bd = to_float(ad), to_float(bd)
        _kernel(kernel, ad, kinds)
        if check is not None:
            check(ad, bd)
        return apply(tt, (input, other), (ad, bd))
    if isinstance(input, Tensor):
        ad, s = _with_number(input._data, as_scalar(other), floats)
        _kernel(kernel, ad, kinds)
        if check is not None:
            check(ad, s)
        assert ts is not None            # every caller passing numbers has the number form
        return apply(ts, (input,), (ad,), (s,))
    if not isinstance(other, Tensor):
        raise _two_numbers(name, input, other)
    bd, s = _with_number(other._data, as_scalar(input), floats)
    _kernel(kernel, bd, kinds)
    if check is not None:
        check(np.asarray(s, bd.dtype), bd)
    assert rs is not None                # as above, for a number first
    return apply(rs, (other,), (bd,), (s,))


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``atan(input / other)`` in the quadrant of the point ``(other, input)``.

    >>> import ndgrad
    >>> ndgrad.atan2(ndgrad.tensor([1.0]), ndgrad.tensor([0.0])).tolist()[0] > 1.57
    True
    """
    return _binary_op("atan2", input, other, ATAN2, floats=True, kernel="atan2_cpu",
                      kinds="c")


arctan2 = atan2


def remainder(input: Any, other: Any) -> Tensor:
    """Elementwise remainder of ``input / other`` with the sign of the divisor (Python's ``%``).

    >>> import ndgrad
    >>> ndgrad.remainder(ndgrad.tensor([5, -5]), 3).tolist()
    [2, 1]
    """
    return _binary_op("remainder", input, other, REMAINDER, REMAINDER_S, REMAINDER_RS,
                      kernel="remainder_cpu", kinds="bc", check=_zero_division)


def fmod(input: Tensor, other: Any) -> Tensor:
    """Elementwise C remainder of ``input / other`` (the sign of the dividend).

    >>> import ndgrad
    >>> ndgrad.fmod(ndgrad.tensor([5, -5]), 3).tolist()
    [2, -2]
    """
    return _binary_op("fmod", input, other, FMOD, FMOD_S, kernel="fmod_cpu", kinds="bc",
                      check=_zero_division)


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``sqrt(input**2 + other**2)`` (floating point inputs).

    >>> import ndgrad
    >>> ndgrad.hypot(ndgrad.tensor([3.0]), ndgrad.tensor([4.0])).tolist()
    [5.0]
    """
    return _binary_op("hypot", input, other, HYPOT, kernel="hypot_cpu", kinds="biuc")


def _fminmax(name: str, op: Op, input: Tensor, other: Tensor) -> Tensor:
    if input._data.dtype.kind == "c" or other._data.dtype.kind == "c":
        raise RuntimeError(f"{name} not implemented for complex tensors.")
    return _binary_op(name, input, other, op)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum that ignores NaN (NaN only where both are NaN).

    >>> import ndgrad
    >>> ndgrad.fmax(ndgrad.tensor([1.0, float("nan")]), ndgrad.tensor([2.0, 0.0])).tolist()
    [2.0, 0.0]
    """
    return _fminmax("fmax", FMAX, input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum that ignores NaN (NaN only where both are NaN).

    >>> import ndgrad
    >>> ndgrad.fmin(ndgrad.tensor([1.0, float("nan")]), ndgrad.tensor([2.0, 0.0])).tolist()
    [1.0, 0.0]
    """
    return _fminmax("fmin", FMIN, input, other)


def copysign(input: Tensor, other: Any) -> Tensor:
    """The magnitude of ``input`` with the sign of ``other`` (a float result).

    >>> import ndgrad
    >>> ndgrad.copysign(ndgrad.tensor([1, 2]), -1).tolist()
    [-1.0, -2.0]
    """
    return _binary_op("copysign", input, other, COPYSIGN, COPYSIGN_S, floats=True,
                      kernel="copysign_cpu", kinds="c")


def xlogy(input: Any, other: Any) -> Tensor:
    """Elementwise ``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN).

    >>> import ndgrad
    >>> ndgrad.xlogy(ndgrad.tensor([0.0, 1.0]), ndgrad.tensor([0.0, 1.0])).tolist()
    [0.0, 0.0]
    """
    return _binary_op("xlogy", input, other, XLOGY, XLOGY_S, XLOGY_RS, floats=True,
                      kernel="xlogy_cpu", kinds="c")


def xlog1py(input: Any, other: Any) -> Tensor:
    """Elementwise ``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN).

    >>> import ndgrad
    >>> ndgrad.special.xlog1py(ndgrad.tensor([0.0, 2.0]), ndgrad.tensor([-1.0, 0.0])).tolist()
    [0.0, 0.0]
    """
    return _binary_op("special_xlog1py", input, other, XLOG1PY, XLOG1PY_S, XLOG1PY_RS, floats=True,
                      kernel="xlog1py", kinds="c")


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``log(exp(input) + exp(other))`` without overflow.

    >>> import ndgrad
    >>> ndgrad.logaddexp(ndgrad.tensor([0.0]), ndgrad.tensor([0.0])).tolist()[0] > 0.69
    True
    """
    return _binary_op("logaddexp", input, other, LOGADDEXP, kernel="logaddexp_cpu",
                      kinds="biu")


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``log2(2**input + 2**other)`` without overflow.

    >>> import ndgrad
    >>> ndgrad.logaddexp2(ndgrad.tensor([1.0]), ndgrad.tensor([1.0])).tolist()
    [2.0]
    """
    return _binary_op("logaddexp2", input, other, LOGADDEXP2, kernel="logaddexp2_cpu",
                      kinds="biuc")


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)``.

    >>> import ndgrad
    >>> ndgrad.lerp(ndgrad.tensor([0.0]), ndgrad.tensor([10.0]), 0.25).tolist()
    [2.5]
    """
    if _bmarked((input, end, weight)):  # Note [Batched backward]
        r = _bcall(lerp, input, end, weight)
        if r is not NotImplemented:
            return r
    a, b = input._data, end._data
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected dtype {_cname(a.dtype)} for `end` but got dtype "
                           f"{_cname(b.dtype)}")
    if isinstance(weight, Tensor):
        w = weight._data
        if w.dtype != a.dtype and w.ndim > 0:
            raise RuntimeError(f"expected dtype {_cname(a.dtype)} for `weight` but got dtype "
                               f"{_cname(w.dtype)}")
        _pw._not_implemented_for("lerp_kernel_tensor", a, "biu")
        _pw._check_broadcast(a.shape, b.shape, w.shape)
        w = w if w.dtype == a.dtype else w.astype(a.dtype)
        return apply(LERP_T, (input, end, weight), (a, b, w))
    _pw._not_implemented_for("lerp_kernel_scalar", a, "biu")
    _pw._check_broadcast(a.shape, b.shape)
    w = as_scalar(weight)
    if a.dtype in _LOW:    # checked against float32, the type PyTorch computes in
        w = _dtype.scalar_to(w, _dtype.float32)
    else:
        w = _dtype.scalar_to(w, _dtype._FROM_NP[a.dtype])
    return apply(LERP_S, (input, end), (a, b), (w,))


def _addc(name: str, op: Op, input: Tensor, tensor1: Tensor, tensor2: Tensor,
          value: Any) -> Tensor:
    if _bmarked((input, tensor1, tensor2)):  # Note [Batched backward]
        r = _bcall(_addc, name, op, input, tensor1, tensor2, value)
        if r is not NotImplemented:
            return r
    if op is ADDCDIV and tensor1._data.dtype.kind in "biu" and \
            tensor2._data.dtype.kind in "biu":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
            "for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    rt = _dtype.result_type(input, tensor1, tensor2)
    if rt.np.kind == "b":
        raise NotImplementedError(f"\"{name}_cpu_out\" not implemented for 'Bool'")
    arrays = tuple(t._data if t._data.dtype == rt.np else t._data.astype(rt.np)
                   for t in (input, tensor1, tensor2))
    _pw._check_broadcast(*(x.shape for x in arrays))
    v = as_scalar(value)
    if isinstance(v, _pycomplex) and rt.np.kind != "c":
        raise RuntimeError("value cannot be converted to type "
                           f"{_C_NAMES.get(rt.np.name, rt.np.name)} without overflow")
    if rt.np.kind in "iub" and isinstance(v, float):
        v = int(v)
    # float16/bfloat16 compute in float32 (``_opmath``): the value is checked against and
    # rounded to float32, as torch's opmath value (65519 * a half is inf, not an error)
    v = _dtype.scalar_to(v, _dtype.float32 if rt in (_dtype.float16, _dtype.bfloat16) else rt)
    return apply(op, (input, tensor1, tensor2), arrays, (v,))


def _cname(d: np.dtype) -> str:
    return _C_NAMES.get(d.name, d.name)


_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "int64_t", "int32": "int", "int16": "short",
            "int8": "signed char", "uint8": "uint8_t", "bool": "bool"}


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``.

    >>> import ndgrad
    >>> ndgrad.addcmul(ndgrad.tensor([1.0]), ndgrad.tensor([2.0]), ndgrad.tensor([3.0]),
    ...                value=0.5).tolist()
    [4.0]
    """
    return _addc("addcmul", ADDCMUL, input, tensor1, tensor2, value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (not for two integer tensors).

    >>> import ndgrad
    >>> ndgrad.addcdiv(ndgrad.tensor([1.0]), ndgrad.tensor([3.0]), ndgrad.tensor([2.0]),
    ...                value=2).tolist()
    [4.0]
    """
    return _addc("addcdiv", ADDCDIV, input, tensor1, tensor2, value)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``input * 2 ** other`` (a float result).

    >>> import ndgrad
    >>> ndgrad.ldexp(ndgrad.tensor([1.0]), ndgrad.tensor([3])).tolist()
    [8.0]
    """
    if _bmarked((input, other)):  # Note [Batched backward]
        r = _bcall(ldexp, input, other)
        if r is not NotImplemented:
            return r
    rt = _dtype.result_type(input, other).np
    if rt.kind in "biu":
        rt = _dtype.get_default_dtype().np
    a = input._data if input._data.dtype == rt else input._data.astype(rt)
    e = other._data
    if e.dtype.kind == "b" and input._data.dtype.kind in "fc":
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    if e.dtype.kind not in "biu" and e.dtype != rt:
        e = e.astype(rt)
    _pw._check_broadcast(a.shape, e.shape)
    return apply(LDEXP, (input, other), (a, e))


def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` computed in double precision (float64, or complex128 if an
    operand is complex).

    >>> import ndgrad
    >>> ndgrad.float_power(ndgrad.tensor([2]), 2).dtype
    ndgrad.float64
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise _two_numbers("float_power", input, exponent)
    cplx = any((x._data.dtype.kind == "c") if isinstance(x, Tensor) else isinstance(
        as_scalar(x), _pycomplex) for x in (input, exponent))
    dt = _dtype.complex128 if cplx else _dtype.float64
    if isinstance(input, Tensor):
        input = input.to(dt)
    else:
        input = _pycomplex(as_scalar(input)) if cplx else float(as_scalar(input))
    if isinstance(exponent, Tensor):
        exponent = exponent.to(dt)
    else:
        exponent = _pycomplex(as_scalar(exponent)) if cplx else float(as_scalar(exponent))
    return _pw.pow(input, exponent)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """Step function: 0 for negative ``input``, 1 for positive, ``values`` at 0.

    >>> import ndgrad
    >>> ndgrad.heaviside(ndgrad.tensor([-1.0, 0.0, 2.0]), ndgrad.tensor([0.5])).tolist()
    [0.0, 0.5, 1.0]
    """
    a, v = input._data, values._data
    if a.dtype.kind == "c" or v.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if a.dtype != v.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    _pw._check_broadcast(a.shape, v.shape)
    return apply(HEAVISIDE, (input, values), (a, v))


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating point value after ``input`` towards ``other``.

    >>> import ndgrad
    >>> ndgrad.nextafter(ndgrad.tensor([1.0]), ndgrad.tensor([2.0])).item() > 1.0
    True
    """
    return _binary_op("nextafter", input, other, NEXTAFTER, kernel="nextafter_cpu",
                      kinds="biuc")


def true_divide(input: Any, other: Any) -> Tensor:
    """``div(input, other)`` (true division).

    >>> import ndgrad
    >>> ndgrad.true_divide(ndgrad.tensor([3]), 2).tolist()
    [1.5]
    """
    return _pw.div(input, other)


def rsub(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input``.

    >>> import ndgrad
    >>> ndgrad.rsub(ndgrad.tensor([1.0]), ndgrad.tensor([5.0]), alpha=2).tolist()
    [3.0]
    """
    if not isinstance(other, Tensor) or input.__class__ is _pw._SPARSE or \
            other.__class__ is _pw._SPARSE:      # Note [Sparse arithmetic forms]
        return _pw.rsub(input, other, alpha=alpha)
    if _bmarked((input, other)):  # Note [Batched backward]
        r = _bcall(rsub, input, other, alpha=alpha)
        if r is not NotImplemented:
            return r
    _pw._check_bool_sub(input, other)
    ad, bd = promote_pair(input, other)
    _pw._check_broadcast(ad.shape, bd.shape)
    al = alpha
    if not (alpha == 1 and not isinstance(alpha, (bool, np.bool_))):
        al = _pw._check_alpha(alpha, ad.dtype)
    return apply(RSUB, (input, other), (ad, bd), (al,))


frexp_result = _rt.frexp


def frexp(input: Tensor) -> tuple:
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent`` and
    ``0.5 <= |mantissa| < 1`` (exponent int32; floating point inputs only).

    >>> import ndgrad
    >>> m, e = ndgrad.frexp(ndgrad.tensor([8.0]))
    >>> m.tolist(), e.tolist()
    ([0.5], [4])
    """
    x = input._data
    if x.dtype.kind != "f" and x.dtype not in _LOW:     # integers, bool and complex
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    from .pointwise import apply_nondiff
    e = apply_nondiff(FREXP_EXPONENT, (input,), (x,))
    return frexp_result(apply(FREXP, (input,), (x,), (e,)), e)


def _frexp_exponent_fwd(x: np.ndarray) -> np.ndarray:
    xe = x.astype(np.float32) if x.dtype in _LOW else x
    return np.frexp(xe)[1].astype(np.int32)


# frexp's exponent output: an op without VJP (int32), so that a traced graph computes it (Note
# [Index ops] in ops/sort.py); the mantissa op FREXP takes it as a tensor argument.
FREXP_EXPONENT = Op("frexp_exponent", "FrexpExponentBackward0", _frexp_exponent_fwd, jvp=zero)


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001
    """The complex tensor ``real + i * imag`` (float32 gives complex64, float64 complex128).

    >>> import ndgrad
    >>> ndgrad.complex(ndgrad.tensor([1.0]), ndgrad.tensor([2.0])).tolist()
    [(1+2j)]
    """
    return _complex_like("complex", COMPLEX, real, imag)


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002
    """The complex tensor ``abs * (cos(angle) + i sin(angle))``.

    >>> import ndgrad
    >>> ndgrad.polar(ndgrad.tensor([2.0]), ndgrad.tensor([0.0])).tolist()
    [(2+0j)]
    """
    return _complex_like("polar", POLAR, abs, angle)


def _complex_like(name: str, op: Op, a: Tensor, b: Tensor) -> Tensor:
    if _bmarked((a, b)):  # Note [Batched backward]
        r = _bcall(_complex_like, name, op, a, b)
        if r is not NotImplemented:
            return r
    x, y = a._data, b._data
    ok = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
    if x.dtype not in ok or y.dtype not in ok:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_name_of(x.dtype)} and {_name_of(y.dtype)}")
    if x.dtype != y.dtype:
        raise RuntimeError(f"Expected object of scalar type {_name_of(x.dtype)} but got scalar "
                           f"type {_name_of(y.dtype)} for second argument")
    if x.dtype == np.float16:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Half'")
    _pw._check_broadcast(x.shape, y.shape)
    return apply(op, (a, b), (x, y))


# ---------------------------------------------------------------------------- integer-only ops
def _shift_fwd(left: bool) -> Callable:
    def fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        bits = a.dtype.itemsize * 8
        b = np.asarray(b)
        out_of_range = (b < 0) | (b >= bits)
        bs = np.where(out_of_range, 0, b).astype(a.dtype)
        if left:
            r = np.left_shift(a, bs)
            return np.where(out_of_range, np.zeros((), a.dtype), r).astype(a.dtype, copy=False)
        r = np.right_shift(a, bs)
        fill = np.right_shift(a, np.asarray(bits - 1, a.dtype)) if a.dtype.kind == "i" else \
            np.zeros((), a.dtype)
        return np.where(out_of_range, fill, r).astype(a.dtype, copy=False)
    return fwd


_LSHIFT, _RSHIFT = _shift_fwd(True), _shift_fwd(False)


def _int_binary(name: str, kernel: str, fwd: Callable, input: Any, other: Any) -> Tensor:
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        ad, bd = promote_pair(input, other)
        _check_shapes(ad, bd)
    elif isinstance(input, Tensor):
        ad, s = scalar_operand(input._data, as_scalar(other))
        bd = np.asarray(s, ad.dtype)
    elif isinstance(other, Tensor):
        bd, s = scalar_operand(other._data, as_scalar(input))
        ad = np.asarray(s, bd.dtype)
    else:
        raise _two_numbers(name, input, other)
    _pw._not_implemented_for(kernel, ad, "fcb")
    _unsigned.check(name, (ad,))
    if ad.dtype in _LOW or bd.dtype in _LOW:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_name_of(ad.dtype)}'")
    return _wrap(np.asarray(fwd(ad, bd)).astype(ad.dtype, copy=False))


def bitwise_left_shift(input: Any, other: Any) -> Tensor:
    """Elementwise ``input << other`` (integers; shifts out of range give 0).

    >>> import ndgrad
    >>> ndgrad.bitwise_left_shift(ndgrad.tensor([1, 3]), 2).tolist()
    [4, 12]
    """
    return _int_binary("bitwise_left_shift", "lshift_cpu", _LSHIFT, input, other)


def bitwise_right_shift(input: Any, other: Any) -> Tensor:
    """Elementwise arithmetic ``input >> other`` (integers).

    >>> import ndgrad
    >>> ndgrad.bitwise_right_shift(ndgrad.tensor([-8, 8]), 2).tolist()
    [-2, 2]
    """
    return _int_binary("bitwise_right_shift", "rshift_cpu", _RSHIFT, input, other)


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise greatest common divisor (non-negative; integers).

    >>> import ndgrad
    >>> ndgrad.gcd(ndgrad.tensor([-4, 6]), ndgrad.tensor([6, 9])).tolist()
    [2, 3]
    """
    return _int_binary("gcd", "gcd_cpu", np.gcd, input, other)


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise least common multiple (non-negative; integers).

    >>> import ndgrad
    >>> ndgrad.lcm(ndgrad.tensor([-4, 6]), ndgrad.tensor([6, 9])).tolist()
    [12, 18]
    """
    return _int_binary("lcm", "lcm_cpu", _lcm, input, other)


def _lcm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|a / gcd * b|`` (0 where gcd is 0), wrapping around on overflow as PyTorch's."""
    g = np.gcd(a, b)
    with np.errstate(all="ignore"):
        r = np.abs((a // np.where(g == 0, 1, g)).astype(a.dtype) * b)
    return np.where(g == 0, np.zeros((), r.dtype), r).astype(a.dtype, copy=False)


# ---------------------------------------------------------------------------- in-place compares
def _zero_grads(ctx, g):
    z = _zeros_of(g)
    if len(ctx.next_functions) == 1:
        return z
    return z, (_zeros_of(g) if ctx.needs_input_grad(1) else None)


def _compare_inplace_ops(name: str) -> tuple:
    """``x.eq_(y)``: the comparison's result in ``x``'s dtype; PyTorch records ``EqBackward1``
    (``EqBackward0`` for a number) with zero gradients. The result (computed by the
    comparison itself) is a tensor argument."""
    node = name[0].upper() + name[1:]
    fwd = _cast_result
    tt = Op(name + "_", node + "Backward1", fwd, _zero_grads, inputs=("self", "other"),
            args=("result",), jvp=zero)
    ts = Op(name + "_", node + "Backward0", lambda a, r: _dtype.cast(r._data, a.dtype), _zero_grads,
            args=("result",), jvp=zero)
    return tt, ts


def _cast_result(a: np.ndarray, b: np.ndarray, r: Tensor) -> np.ndarray:
    return _dtype.cast(r._data, a.dtype)


COMPARE_INPLACE = {n: _compare_inplace_ops(n) for n in ("eq", "ne", "lt", "le", "gt", "ge")}


def compare_inplace(name: str) -> Callable:
    """The out-of-place computation of ``x.eq_(y)`` and friends (for the in-place method)."""
    tt, ts = COMPARE_INPLACE[name]
    cmp = getattr(_pw, name)

    def fn(input: Tensor, other: Any) -> Tensor:
        r = cmp(input, other)
        if isinstance(other, Tensor):
            return apply(tt, (input, other), (input._data, other._data), (r,))
        return apply(ts, (input,), (input._data,), (r,))
    fn.__name__ = name + "_"
    return fn


def _bitwise(name: str) -> Callable:
    impl = getattr(_pw, name)

    def fn(input: Any, other: Any) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise _two_numbers(name, input, other)
        if not isinstance(input, Tensor):
            input, other = other, input       # and, or and xor commute
        rt = _dtype.result_type(input, as_scalar(other) if not isinstance(other, Tensor)
                                else other)
        if rt.np.kind in "fc":
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{rt._torch_name}'")
        return impl(input, other)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = impl.__doc__
    return fn


bitwise_and = _bitwise("bitwise_and")
bitwise_or = _bitwise("bitwise_or")
bitwise_xor = _bitwise("bitwise_xor")


def logical_xor(input: Tensor, other: Any) -> Tensor:
    """Bool tensor, True where exactly one of ``input`` and ``other`` is nonzero.

    >>> import ndgrad
    >>> ndgrad.logical_xor(ndgrad.tensor([1, 0, 2]), ndgrad.tensor([0, 0, 3])).tolist()
    [True, False, False]
    """
    return _pw._logical_binary(np.logical_xor, input, other)


# ---------------------------------------------------------------------------- batching rules
def _install_batching() -> None:
    from ._batching import RULES, VJP_ONLY, _pointwise
    for op in BINARY_OPS:
        RULES[op] = _pointwise()
    for ops in COMPARE_INPLACE.values():
        VJP_ONLY.update(ops)


_install_batching()


from ._batching import RULES as _RULES  # noqa: E402 (after the op it maps)
from ._batching import _pointwise  # noqa: E402

_RULES[FREXP_EXPONENT] = _pointwise()
