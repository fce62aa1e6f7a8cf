"""The unary math family: exponentials and logarithms, trigonometric and hyperbolic functions,
special functions, rounding, and a few elementwise utilities.

One ``Op`` declaration per op (Note [One declaration per op] in ops/_dispatch.py), followed by
the public functions, which cast integer and bool inputs to the default float dtype where
PyTorch does and raise PyTorch's errors for the dtypes it refuses. VJP rules are written with
ndgrad ops, so gradients of gradients work; complex inputs follow PyTorch's rule (the gradient
is multiplied by the conjugate of the derivative). The special functions use ``scipy.special``,
imported inside their forwards.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> ndgrad.expm1(x).sum().backward()
    >>> x.grad
    tensor([1.0000, 2.7183])
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from .. import _dtype
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from . import pointwise as _pw
from ._dispatch import Op, apply
from ._jvp import elementwise, linear, zero
from ._util import to_float

__all__ = ["exp2", "expm1", "log2", "log10", "log1p", "rsqrt", "square", "tan", "asin", "acos",
           "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "lgamma",
           "digamma", "floor", "ceil", "trunc", "frac", "round", "deg2rad", "rad2deg", "logit",
           "sinc", "angle", "positive", "signbit", "nan_to_num"]

_FLOATING = _pw._FLOATING
_c = _pw._c
_zeros_of = _pw._zeros_of
_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_HALF_SQRT_PI = math.sqrt(math.pi) / 2.0
_LOW_PRECISION = _dtype.HALF_NP


def _special(name: str) -> Callable[..., np.ndarray]:
    """Forward of ``scipy.special.<name>`` keeping the input's dtype (float16 and bfloat16 are
    computed in float32, which SciPy supports, and rounded back)."""
    def fwd(x: np.ndarray, *args: Any) -> np.ndarray:
        import scipy.special
        f = getattr(scipy.special, name)
        if x.dtype in _LOW_PRECISION:
            return np.asarray(f(*args, x.astype(np.float32))).astype(x.dtype)
        return np.asarray(f(*args, x)).astype(x.dtype, copy=False)
    fwd.__name__ = name
    return fwd


def _sinc_fwd(x: np.ndarray) -> np.ndarray:
    # np.sinc widens bfloat16 and warns at infinities from inside NumPy (where ndgrad's warning
    # filter, Note [No floating point warnings], does not reach).
    with np.errstate(invalid="ignore"):
        return np.asarray(np.sinc(x)).astype(x.dtype, copy=False)


def _lgamma_fwd(x: np.ndarray) -> np.ndarray:
    r = _special("gammaln")(x)
    return np.where(x == -np.inf, np.asarray(np.inf, r.dtype), r)   # PyTorch: lgamma(-inf) = inf


def _x(ctx) -> Tensor:
    return ctx.saved[0]


# ---------------------------------------------------------------------------- exp / log
def _sqrt_1m_sq(x: Tensor) -> Tensor:
    return _pw.sqrt(1 - x * x)


def _sqrt_sq_m1(x: Tensor) -> Tensor:
    """``sqrt(x - 1) * sqrt(x + 1)``: ``sqrt(x^2 - 1)`` on the principal branch of acosh."""
    return _pw.sqrt(x - 1) * _pw.sqrt(x + 1)


EXP2 = Op("exp2", "Exp2Backward0", np.exp2, lambda ctx, g: g * _c(ctx.saved[0] * _LN2),
          saves=("result",), jvp=elementwise(lambda ctx: ctx.result * _LN2))
EXPM1 = Op("expm1", "Expm1Backward0", np.expm1, lambda ctx, g: g * _c(ctx.saved[0] + 1),
           saves=("result",), jvp=elementwise(lambda ctx: ctx.result + 1))
LOG2 = Op("log2", "Log2Backward0", np.log2, lambda ctx, g: g / _c(_x(ctx) * _LN2),
          saves=("self",), jvp=lambda ctx, t: t / (ctx.inputs[0] * _LN2))
LOG10 = Op("log10", "Log10Backward0", np.log10, lambda ctx, g: g / _c(_x(ctx) * _LN10),
           saves=("self",), jvp=lambda ctx, t: t / (ctx.inputs[0] * _LN10))
LOG1P = Op("log1p", "Log1PBackward0", np.log1p, lambda ctx, g: g / _c(_x(ctx) + 1),
           saves=("self",), jvp=lambda ctx, t: t / (ctx.inputs[0] + 1))
RSQRT = Op("rsqrt", "RsqrtBackward0", lambda x: 1 / np.sqrt(x),
           lambda ctx, g: -0.5 * g * _c(ctx.saved[0] * ctx.saved[0] * ctx.saved[0]),
           saves=("result",), jvp=elementwise(lambda ctx: -0.5 * ctx.result ** 3))

# ---------------------------------------------------------------------------- trigonometric
TAN = Op("tan", "TanBackward0", np.tan, lambda ctx, g: g * _c(1 + ctx.saved[0] * ctx.saved[0]),
         saves=("result",), jvp=elementwise(lambda ctx: 1 + ctx.result * ctx.result))
ASIN = Op("asin", "AsinBackward0", np.arcsin, lambda ctx, g: g / _c(_sqrt_1m_sq(_x(ctx))),
          saves=("self",), jvp=lambda ctx, t: t / _sqrt_1m_sq(ctx.inputs[0]))
ACOS = Op("acos", "AcosBackward0", np.arccos, lambda ctx, g: -g / _c(_sqrt_1m_sq(_x(ctx))),
          saves=("self",), jvp=lambda ctx, t: -t / _sqrt_1m_sq(ctx.inputs[0]))
ATAN = Op("atan", "AtanBackward0", np.arctan, lambda ctx, g: g / _c(1 + _x(ctx) * _x(ctx)),
          saves=("self",), jvp=lambda ctx, t: t / (1 + ctx.inputs[0] * ctx.inputs[0]))

# ---------------------------------------------------------------------------- hyperbolic
SINH = Op("sinh", "SinhBackward0", np.sinh, lambda ctx, g: g * _c(cosh(_x(ctx))),
          saves=("self",), jvp=elementwise(lambda ctx: cosh(ctx.inputs[0])))
COSH = Op("cosh", "CoshBackward0", np.cosh, lambda ctx, g: g * _c(sinh(_x(ctx))),
          saves=("self",), jvp=elementwise(lambda ctx: sinh(ctx.inputs[0])))
ASINH = Op("asinh", "AsinhBackward0", np.arcsinh,
           lambda ctx, g: g / _c(_pw.sqrt(_x(ctx) * _x(ctx) + 1)), saves=("self",),
           jvp=lambda ctx, t: t / _pw.sqrt(ctx.inputs[0] * ctx.inputs[0] + 1))
ACOSH = Op("acosh", "AcoshBackward0", np.arccosh,
           lambda ctx, g: g / _c(_sqrt_sq_m1(_x(ctx))), saves=("self",),
           jvp=lambda ctx, t: t / _sqrt_sq_m1(ctx.inputs[0]))
ATANH = Op("atanh", "AtanhBackward0", np.arctanh,
           lambda ctx, g: g / _c(1 - _x(ctx) * _x(ctx)), saves=("self",),
           jvp=lambda ctx, t: t / (1 - ctx.inputs[0] * ctx.inputs[0]))



def _inplace_without_derivative(op: Op) -> Op:
    """PyTorch's in-place ``asinh_``/``acosh_``/``atanh_`` record a node (``AsinhBackward1``)
    without a derivative: its backward and forward AD raise."""
    def vjp(ctx, g):
        raise NotImplementedError(f"the derivative for 'inplace version of {op.name}' is not "
                                  "implemented.")

    def jvp(ctx, t):
        raise NotImplementedError(
            f"Trying to use forward AD with {op.name}_ that does not support it because it has "
            "not been implemented yet.\nPlease file an issue to PyTorch at "
            "https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that "
            "we can prioritize its implementation.")
    return Op(op.name + "_", op.node_name[:-1] + "1", op.forward, vjp, jvp=jvp)


ASINH_ = _inplace_without_derivative(ASINH)
ACOSH_ = _inplace_without_derivative(ACOSH)
ATANH_ = _inplace_without_derivative(ATANH)


# ---------------------------------------------------------------------------- special functions
def _d_erf(x: Tensor) -> Tensor:
    return _TWO_OVER_SQRT_PI * _pw.exp(-(x * x))


def _d_erfinv(x: Tensor) -> Tensor:
    y = erfinv(x)
    return _HALF_SQRT_PI * _pw.exp(y * y)


def _polygamma_vjp(ctx, g):
    (x, n) = ctx.saved
    return g * polygamma_(n + 1, x)


ERF = Op("erf", "ErfBackward0", _special("erf"), lambda ctx, g: g * _d_erf(_x(ctx)),
         saves=("self",), jvp=elementwise(lambda ctx: _d_erf(ctx.inputs[0])))
ERFC = Op("erfc", "ErfcBackward0", _special("erfc"), lambda ctx, g: -g * _d_erf(_x(ctx)),
          saves=("self",), jvp=lambda ctx, t: -t * _d_erf(ctx.inputs[0]))
ERFINV = Op("erfinv", "ErfinvBackward0", _special("erfinv"),
            lambda ctx, g: g * _d_erfinv(_x(ctx)), saves=("self",),
            jvp=elementwise(lambda ctx: _d_erfinv(ctx.inputs[0])))
LGAMMA = Op("lgamma", "LgammaBackward0", _lgamma_fwd,
            lambda ctx, g: g * digamma(_x(ctx)), saves=("self",),
            jvp=elementwise(lambda ctx: digamma(ctx.inputs[0])))
DIGAMMA = Op("digamma", "DigammaBackward0", _special("psi"),
             lambda ctx, g: g * polygamma_(1, _x(ctx)), saves=("self",),
             jvp=elementwise(lambda ctx: polygamma_(1, ctx.inputs[0])))
def _trigamma(x: np.ndarray) -> np.ndarray:
    """polygamma(1, x) as PyTorch evaluates it (so that digamma's gradient agrees to float64
    precision): six steps of the recurrence psi1(x) = psi1(x + 1) + 1/x^2, then the asymptotic
    series 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7) (Abramowitz & Stegun 6.4.12);
    reflection psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x) below 1/2."""
    dt = x.dtype
    v = x.astype(np.float32 if dt in _LOW_PRECISION else dt)
    sign, acc = np.ones_like(v), np.zeros_like(v)
    small = v < 0.5
    if small.any():
        s = np.sin(np.pi * v)
        acc = np.where(small, -(np.pi * np.pi) / (s * s), acc)
        sign = np.where(small, -1.0, 1.0).astype(v.dtype)
        v = np.where(small, 1 - v, v)
    for _ in range(6):
        acc = acc + 1 / (v * v)
        v = v + 1
    inv2 = 1 / (v * v)
    acc = acc + (1 + 1 / (2 * v) + inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 / 42))) / v
    return (sign * acc).astype(dt, copy=False)


def _polygamma_fwd(x: np.ndarray, n: int) -> np.ndarray:
    return _trigamma(x) if n == 1 else _special("polygamma")(x, n)


# polygamma(n, x), the derivatives of digamma (used by its derivative rules).
POLYGAMMA = Op("polygamma", "PolygammaBackward0", _polygamma_fwd,
               _polygamma_vjp, saves=("self", "n"), args=("n",),
               jvp=elementwise(lambda ctx: polygamma_(ctx._args[0] + 1, ctx.inputs[0])))


def polygamma_(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of digamma (internal: the derivative rules of digamma)."""
    return apply(POLYGAMMA, (input,), (input._data,), (n,))


# ---------------------------------------------------------------------------- rounding
def _keep_int(ufunc: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """Rounding of floats; integer inputs are already whole and come back as a copy."""
    def fwd(x: np.ndarray) -> np.ndarray:
        return x.copy() if x.dtype.kind in "iu" else ufunc(x)
    return fwd


def _round_decimals_fwd(x: np.ndarray, decimals: int) -> np.ndarray:
    scale = np.asarray(10.0 ** abs(decimals), dtype=x.dtype)
    if decimals < 0:
        return (np.round(x / scale) * scale).astype(x.dtype, copy=False)
    return (np.round(x * scale) / scale).astype(x.dtype, copy=False)


def _zero_vjp(ctx, g):
    return _zeros_of(g)


FLOOR = Op("floor", "FloorBackward0", _keep_int(np.floor), _zero_vjp, jvp=zero)
CEIL = Op("ceil", "CeilBackward0", _keep_int(np.ceil), _zero_vjp, jvp=zero)
TRUNC = Op("trunc", "TruncBackward0", _keep_int(np.trunc), _zero_vjp, jvp=zero)
ROUND = Op("round", "RoundBackward0", _keep_int(np.round), _zero_vjp, jvp=zero)
ROUND_DECIMALS = Op("round", "RoundBackward1", _round_decimals_fwd, _zero_vjp,
                    args=("decimals",), jvp=zero)
FRAC = Op("frac", "FracBackward0", lambda x: x - np.trunc(x), lambda ctx, g: g,
           jvp=lambda ctx, t: t)

# ---------------------------------------------------------------------------- angles
_DEG = math.pi / 180.0
DEG2RAD = Op("deg2rad", "Deg2RadBackward0", np.deg2rad, lambda ctx, g: g * _DEG, jvp=linear)
RAD2DEG = Op("rad2deg", "Rad2DegBackward0", np.rad2deg, lambda ctx, g: g / _DEG, jvp=linear)


def _angle_fwd(x: np.ndarray) -> np.ndarray:
    r = np.angle(x)
    return r.astype(np.real(x).dtype if x.dtype.kind == "c" else x.dtype, copy=False)


def _angle_deriv(x: Tensor, g: Tensor) -> Tensor:
    """``g * i z / |z|^2`` (0 at z = 0) for complex ``z``; zeros for real inputs."""
    if x._data.dtype.kind != "c":
        return _zeros_of(g)
    a = x.abs()
    safe = _pw.where(a == 0, 1.0, a)
    return _pw.where(a == 0, 0.0, g * x * 1j / (safe * safe))


def _angle_jvp(ctx, t):
    x = ctx.inputs[0]
    if x._data.dtype.kind != "c":
        return _zeros_of(ctx.result)
    a = x.abs()
    safe = _pw.where(a == 0, 1.0, a)   # d angle = Im(conj(z) dz) / |z|^2
    return _pw.where(a == 0, 0.0, (x.conj() * t * -1j).real_part() / (safe * safe))


ANGLE = Op("angle", "AngleBackward0", _angle_fwd, lambda ctx, g: _angle_deriv(_x(ctx), g),
           saves=("self",), jvp=_angle_jvp)


# ---------------------------------------------------------------------------- logit / sinc
def _logit_fwd(x: np.ndarray, eps: Optional[float]) -> np.ndarray:
    dt = x.dtype
    if eps is not None:   # (np.clip widens bfloat16 to float32: the cast below restores it)
        x = np.clip(x, np.asarray(eps, dt), np.asarray(1 - eps, dt))
    return np.log(x / (1 - x)).astype(dt, copy=False)


def _logit_deriv(x: Tensor, eps: Optional[float]) -> Tensor:
    d = 1 / (x * (1 - x))
    if eps is None:
        return _pw.where((x < 0).logical_or(x > 1), float("nan"), d)
    return _pw.where((x < eps).logical_or(x > 1 - eps), 0.0, d)


LOGIT = Op("logit", "LogitBackward0", _logit_fwd,
           lambda ctx, g: g * _logit_deriv(ctx.saved[0], ctx.saved[1]),
           saves=("self", "eps"), args=("eps",),
           jvp=elementwise(lambda ctx: _logit_deriv(ctx.inputs[0], ctx._args[0])))


def _sinc_deriv(x: Tensor) -> Tensor:
    """``(cos(pi x) - sinc(x)) / x``, 0 at x = 0."""
    zero_ = x == 0
    safe = _pw.where(zero_, 1.0, x)
    return _pw.where(zero_, 0.0, (_pw.cos(math.pi * safe) - sinc(safe)) / safe)


SINC = Op("sinc", "SincBackward0", _sinc_fwd,
          lambda ctx, g: g * _c(_sinc_deriv(_x(ctx))), saves=("self",),
          jvp=elementwise(lambda ctx: _sinc_deriv(ctx.inputs[0])))


# ---------------------------------------------------------------------------- nan_to_num
def _finite_or(x: np.ndarray, nan: float, posinf: Optional[float],
               neginf: Optional[float]) -> np.ndarray:
    import ml_dtypes
    info = ml_dtypes.finfo(x.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    out = np.where(np.isnan(x), np.asarray(nan).astype(x.dtype), x)
    out = np.where(out == np.inf, np.asarray(hi).astype(x.dtype), out)
    return np.where(out == -np.inf, np.asarray(lo).astype(x.dtype), out).astype(x.dtype)


def _nan_to_num_fwd(x: np.ndarray, nan: float, posinf: Optional[float],
                    neginf: Optional[float]) -> np.ndarray:
    if x.dtype.kind in "biu":
        return x.copy()
    if x.dtype.kind == "c":
        parts = (_finite_or(np.real(x), nan, posinf, neginf),
                 _finite_or(np.imag(x), nan, posinf, neginf))
        return (parts[0] + 1j * parts[1]).astype(x.dtype)
    return _finite_or(x, nan, posinf, neginf)


def _nan_to_num_vjp(ctx, g):
    return _pw.where(_pw.isfinite(ctx.saved[0]), g, 0.0)


NAN_TO_NUM = Op("nan_to_num", "NanToNumBackward0", _nan_to_num_fwd, _nan_to_num_vjp,
                saves=("self",), args=("nan", "posinf", "neginf"),
                jvp=lambda ctx, t: _pw.where(_pw.isfinite(ctx.inputs[0]), t, 0.0))


# ---------------------------------------------------------------------------- public functions
def _float_in(input: Tensor) -> np.ndarray:
    x = input._data
    return x if x.dtype in _FLOATING else to_float(x)


def _real_float_in(input: Tensor, kernel: str) -> np.ndarray:
    _pw._not_implemented_for(kernel, input._data, "c")
    return _float_in(input)


def _unary(op: Op, doc: str, example: str, kernel: Optional[str] = None) -> Callable:
    """The public function of a float-valued unary op (integer and bool inputs are promoted to
    the default float dtype; complex inputs raise when PyTorch has no ``kernel`` for them)."""
    if kernel is None:
        def fn(input: Tensor) -> Tensor:
            return apply(op, (input,), (_float_in(input),))
    else:
        def fn(input: Tensor) -> Tensor:
            return apply(op, (input,), (_real_float_in(input, kernel),))
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = f"{doc}\n\n    >>> import ndgrad\n    {example}\n"
    return fn


exp2 = _unary(EXP2, "Elementwise ``2 ** input``.",
              ">>> ndgrad.exp2(ndgrad.tensor([3.0])).tolist()\n    [8.0]")
expm1 = _unary(EXPM1, "Elementwise ``exp(input) - 1``, accurate near 0.",
               ">>> ndgrad.expm1(ndgrad.tensor([0.0])).tolist()\n    [0.0]")
log2 = _unary(LOG2, "Elementwise base-2 logarithm.",
              ">>> ndgrad.log2(ndgrad.tensor([8.0])).tolist()\n    [3.0]")
log10 = _unary(LOG10, "Elementwise base-10 logarithm.",
               ">>> ndgrad.log10(ndgrad.tensor([100.0], dtype=ndgrad.float64)).tolist()\n    [2.0]")
log1p = _unary(LOG1P, "Elementwise ``log(1 + input)``, accurate near 0.",
               ">>> ndgrad.log1p(ndgrad.tensor([0.0])).tolist()\n    [0.0]")
rsqrt = _unary(RSQRT, "Elementwise ``1 / sqrt(input)``.",
               ">>> ndgrad.rsqrt(ndgrad.tensor([4.0])).tolist()\n    [0.5]")
tan = _unary(TAN, "Elementwise tangent (radians).",
             ">>> ndgrad.tan(ndgrad.tensor([0.0])).tolist()\n    [0.0]")
asin = _unary(ASIN, "Elementwise arcsine.",
              ">>> ndgrad.asin(ndgrad.tensor([0.0])).tolist()\n    [0.0]")
acos = _unary(ACOS, "Elementwise arccosine.",
              ">>> ndgrad.acos(ndgrad.tensor([1.0])).tolist()\n    [0.0]")
atan = _unary(ATAN, "Elementwise arctangent.",
              ">>> ndgrad.atan(ndgrad.tensor([0.0])).tolist()\n    [0.0]")
sinh: Callable[..., Tensor] = _unary(SINH, "Elementwise hyperbolic sine.",
              ">>> ndgrad.sinh(ndgrad.tensor([0.0])).tolist()\n    [0.0]")
cosh: Callable[..., Tensor] = _unary(COSH, "Elementwise hyperbolic cosine.",
              ">>> ndgrad.cosh(ndgrad.tensor([0.0])).tolist()\n    [1.0]")
asinh = _unary(ASINH, "Elementwise inverse hyperbolic sine.",
               ">>> ndgrad.asinh(ndgrad.tensor([0.0])).tolist()\n    [0.0]")
acosh = _unary(ACOSH, "Elementwise inverse hyperbolic cosine (defined for input >= 1).",
               ">>> ndgrad.acosh(ndgrad.tensor([1.0])).tolist()\n    [0.0]")
atanh = _unary(ATANH, "Elementwise inverse hyperbolic tangent (defined for |input| < 1).",
               ">>> ndgrad.atanh(ndgrad.tensor([0.0])).tolist()\n    [0.0]")
erf = _unary(ERF, "Elementwise error function (real inputs).",
             ">>> ndgrad.erf(ndgrad.tensor([0.0])).tolist()\n    [0.0]", "erf_vml_cpu")
erfc = _unary(ERFC, "Elementwise complementary error function ``1 - erf(input)``.",
              ">>> ndgrad.erfc(ndgrad.tensor([0.0])).tolist()\n    [1.0]", "erfc_vml_cpu")
erfinv = _unary(ERFINV, "Elementwise inverse error function (defined for |input| <= 1).",
                ">>> ndgrad.erfinv(ndgrad.tensor([0.0])).tolist()\n    [0.0]",
                "erfinv_vml_cpu")
lgamma = _unary(LGAMMA, "Elementwise ``log(|gamma(input)|)``.",
                ">>> ndgrad.lgamma(ndgrad.tensor([1.0])).tolist()\n    [0.0]", "lgamma_vml_cpu")
digamma: Callable[..., Tensor]
digamma = _unary(DIGAMMA, "Elementwise digamma function, the derivative of lgamma.",
                 ">>> ndgrad.digamma(ndgrad.tensor([1.0])).item() < -0.57\n    True",
                 "digamma")
sinc = _unary(SINC, "Elementwise normalized sinc, ``sin(pi x) / (pi x)`` (1 at 0).",
              ">>> ndgrad.sinc(ndgrad.tensor([0.0, 1.0])).abs().tolist()[0]\n    1.0")

# the out-of-place computations of asinh_, acosh_ and atanh_ (see _inplace_without_derivative)
asinh_inplace = _unary(ASINH_, "asinh for ``asinh_``.",
                       ">>> ndgrad.tensor([0.0]).asinh_().tolist()\n    [0.0]")
acosh_inplace = _unary(ACOSH_, "acosh for ``acosh_``.",
                       ">>> ndgrad.tensor([1.0]).acosh_().tolist()\n    [0.0]")
atanh_inplace = _unary(ATANH_, "atanh for ``atanh_``.",
                       ">>> ndgrad.tensor([0.0]).atanh_().tolist()\n    [0.0]")


def square(input: Tensor) -> Tensor:
    """Elementwise ``input * input`` (as ``input ** 2``; bool inputs give int64).

    >>> import ndgrad
    >>> ndgrad.square(ndgrad.tensor([3, -2])).tolist()
    [9, 4]
    """
    if input._data.dtype.kind == "b":
        input = input.to(_dtype.int64)
    return _pw.pow(input, 2)


def _rounding(op: Op, complex_msg: str) -> Callable:
    def fn(input: Tensor) -> Tensor:
        x = input._data
        if x.dtype.kind == "c":
            raise NotImplementedError(complex_msg)
        _pw._not_implemented_for(f"{op.name}_vml_cpu", x, "b")
        return apply(op, (input,), (x,))
    fn.__name__ = fn.__qualname__ = op.name
    return fn


floor = _rounding(FLOOR, "floor is not supported for complex inputs")
floor.__doc__ = """Elementwise largest integer not above ``input`` (integer dtypes kept).

    >>> import ndgrad
    >>> ndgrad.floor(ndgrad.tensor([-1.5, 1.5])).tolist()
    [-2.0, 1.0]
    """
ceil = _rounding(CEIL, "ceil is not supported for complex inputs")
ceil.__doc__ = """Elementwise smallest integer not below ``input`` (integer dtypes kept).

    >>> import ndgrad
    >>> ndgrad.ceil(ndgrad.tensor([-1.5, 1.5])).tolist()
    [-1.0, 2.0]
    """
trunc = _rounding(TRUNC, "trunc is not supported for complex inputs")
trunc.__doc__ = """Elementwise rounding toward zero (integer dtypes kept).

    >>> import ndgrad
    >>> ndgrad.trunc(ndgrad.tensor([-1.5, 1.5])).tolist()
    [-1.0, 1.0]
    """


def round(input: Tensor, *, decimals: Optional[int] = None) -> Tensor:  # noqa: A001
    """Elementwise rounding half to even, to ``decimals`` decimal places (integer dtypes kept
    without ``decimals``).

    >>> import ndgrad
    >>> ndgrad.round(ndgrad.tensor([0.5, 1.5, 1.26], dtype=ndgrad.float64), decimals=1).tolist()
    [0.5, 1.5, 1.3]
    """
    x = input._data
    if decimals is None:
        _pw._not_implemented_for("round_vml_cpu", x, "bc")
        return apply(ROUND, (input,), (x,))
    _pw._not_implemented_for("round_cpu", x, "biuc")
    return apply(ROUND_DECIMALS, (input,), (x,), (int(decimals),))


def frac(input: Tensor) -> Tensor:
    """Elementwise fractional part, ``input - trunc(input)`` (floating point inputs only).

    >>> import ndgrad
    >>> ndgrad.frac(ndgrad.tensor([-1.5, 2.25])).tolist()
    [-0.5, 0.25]
    """
    _pw._not_implemented_for("frac_cpu", input._data, "biuc")
    return apply(FRAC, (input,), (input._data,))


def _angle_conversion(op: Op, doc: str) -> Callable:
    def fn(input: Tensor) -> Tensor:
        if input._data.dtype.kind == "c":
            raise RuntimeError(f"{op.name} is not supported for complex tensors.")
        return apply(op, (input,), (_float_in(input),))
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


deg2rad = _angle_conversion(DEG2RAD, """Elementwise degrees to radians.

    >>> import ndgrad
    >>> ndgrad.deg2rad(ndgrad.tensor([180.0])).tolist()[0] > 3.14
    True
    """)
rad2deg = _angle_conversion(RAD2DEG, """Elementwise radians to degrees.

    >>> import ndgrad
    >>> ndgrad.rad2deg(ndgrad.tensor([0.0])).tolist()
    [0.0]
    """)


def angle(input: Tensor) -> Tensor:
    """Elementwise argument of complex numbers (pi for negative reals, 0 otherwise).

    >>> import ndgrad
    >>> ndgrad.angle(ndgrad.tensor([1.0, 0.0])).tolist()
    [0.0, 0.0]
    """
    return apply(ANGLE, (input,), (_float_in(input),))


def logit(input: Tensor, eps: Optional[float] = None) -> Tensor:
    """Elementwise ``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` if given.

    >>> import ndgrad
    >>> ndgrad.logit(ndgrad.tensor([0.5])).tolist()
    [0.0]
    """
    _pw._not_implemented_for("logit_cpu", input._data, "c")
    return apply(LOGIT, (input,), (_float_in(input),), (None if eps is None else float(eps),))


def positive(input: Tensor) -> Tensor:
    """``input`` itself (``+input``); not defined for bool tensors.

    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0])
    >>> ndgrad.positive(x) is x
    True
    """
    if input._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def signbit(input: Tensor) -> Tensor:
    """Bool tensor, True where the sign bit is set (including ``-0.0``).

    >>> import ndgrad
    >>> ndgrad.signbit(ndgrad.tensor([-0.0, 1.0])).tolist()
    [True, False]
    """
    x = input._data
    if x.dtype.kind == "c":
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    return _pw.apply_nondiff(SIGNBIT, (input,), (x,))


def _signbit_fwd(x: np.ndarray) -> np.ndarray:
    return np.zeros(x.shape, np.bool_) if x.dtype.kind == "b" else np.signbit(x)


# No VJP: an op of the table so that the jit records it (Note [Non-differentiable ops in the
# table] in ops/pointwise.py).
SIGNBIT = Op("signbit", "SignbitBackward0", _signbit_fwd, jvp=zero)


def nan_to_num(input: Tensor, nan: Optional[float] = 0.0, posinf: Optional[float] = None,
               neginf: Optional[float] = None) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default 0 and the
    largest and lowest finite values of the dtype).

    >>> import ndgrad
    >>> ndgrad.nan_to_num(ndgrad.tensor([float("nan"), 1.0]), nan=-1.0).tolist()
    [-1.0, 1.0]
    """
    if input._data.dtype.kind == "c" and input.requires_grad and is_grad_enabled():
        raise RuntimeError("nan_to_num does not support automatic differentiation for outputs "
                           "with complex dtype.")
    dt = input._data.dtype                        # float16/bfloat16: through float32
    return apply(NAN_TO_NUM, (input,), (input._data,),
                 (_dtype.number_in(0.0 if nan is None else float(nan), dt),
                  _dtype.number_in(posinf, dt), _dtype.number_in(neginf, dt)))


ELEMENTWISE_OPS = (EXP2, EXPM1, LOG2, LOG10, LOG1P, RSQRT, TAN, ASIN, ACOS, ATAN, SINH, COSH,
                   ASINH, ACOSH, ATANH, ERF, ERFC, ERFINV, LGAMMA, DIGAMMA, POLYGAMMA, FLOOR,
                   CEIL, TRUNC, ROUND, ROUND_DECIMALS, FRAC, DEG2RAD, RAD2DEG, ANGLE, LOGIT,
                   SINC, NAN_TO_NUM, ASINH_, ACOSH_, ATANH_)
