"""Special functions of ``torch.special`` (and ``torch.i0``, ``polygamma``, ``mvlgamma``,
``igamma``/``igammac``) that are not in ops/unary.py.

Forwards use ``scipy.special`` (imported inside them); derivative rules are written with ndgrad
ops, so higher derivatives work (d/dx i0 = i1, d/dx polygamma(n, x) = polygamma(n + 1, x) ...).
Integer and bool inputs give the default float dtype; complex inputs, and float16/bfloat16 where
PyTorch has no CPU kernel, raise PyTorch's NotImplementedError. The Bessel functions and
orthogonal polynomials of ``torch.special`` have no derivative in PyTorch: their results never
require grad.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> ndgrad.special.i0(x).sum().backward()
    >>> x.grad
    tensor([0.0000, 0.5652])
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import _dtype
from ..tensor import Tensor, _wrap
from . import pointwise as _pw
from . import unary as _un
from ._dispatch import Op, apply
from ._jvp import elementwise
from ._util import to_float
from .statistics import MUL_SCALAR

_POLYNOMIAL_NAMES = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                     "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                     "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                     "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                     "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]
__all__ = ["i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "erfcx", "entr", "zeta",
           "polygamma", "mvlgamma", "igamma", "igammac", "bessel_j0", "bessel_j1", "bessel_y0",
           "bessel_y1", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
           "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "spherical_bessel_j0", "airy_ai", *_POLYNOMIAL_NAMES]

_special = _un._special
_LOW = _un._LOW_PRECISION
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT1_2 = math.sqrt(0.5)
_LOG_PI = math.log(math.pi)


def _x(ctx) -> Tensor:
    return ctx.saved[0]


# ---------------------------------------------------------------------------- Bessel I
def _i1_deriv(x: Tensor, r: Tensor) -> Tensor:
    """d/dx i1 = i0(x) - i1(x) / x, 1/2 at 0 (and, as in PyTorch, at NaN)."""
    zero = (x.abs() > 0).logical_not()
    safe = _pw.where(zero, 1.0, x)
    return _pw.where(zero, 0.5, i0(x) - r / safe)


def _i1e_deriv(x: Tensor, r: Tensor) -> Tensor:
    """d/dx i1e = i0e(x) - i1e(x) (sign(x) + 1 / x), 1/2 at 0 (and at NaN)."""
    zero = (x.abs() > 0).logical_not()
    safe = _pw.where(zero, 1.0, x)
    return _pw.where(zero, 0.5, i0e(x) - r * (_pw.sign(x) + 1 / safe))


I0 = Op("i0", "I0Backward0", _special("i0"), lambda ctx, g: g * i1(_x(ctx)), saves=("self",),
        jvp=elementwise(lambda ctx: i1(ctx.inputs[0])))
I0E = Op("special_i0e", "SpecialI0EBackward0", _special("i0e"),
         lambda ctx, g: g * (i1e(ctx.saved[0]) - _pw.sign(ctx.saved[0]) * ctx.saved[1]),
         saves=("self", "result"),
         jvp=elementwise(lambda ctx: i1e(ctx.inputs[0]) - _pw.sign(ctx.inputs[0]) * ctx.result))
I1 = Op("special_i1", "SpecialI1Backward0", _special("i1"),
        lambda ctx, g: g * _i1_deriv(ctx.saved[0], ctx.saved[1]), saves=("self", "result"),
        jvp=elementwise(lambda ctx: _i1_deriv(ctx.inputs[0], ctx.result)))
I1E = Op("special_i1e", "SpecialI1EBackward0", _special("i1e"),
         lambda ctx, g: g * _i1e_deriv(ctx.saved[0], ctx.saved[1]), saves=("self", "result"),
         jvp=elementwise(lambda ctx: _i1e_deriv(ctx.inputs[0], ctx.result)))


# ---------------------------------------------------------------------------- normal distribution
def _ndtri_deriv(r: Tensor) -> Tensor:
    return _SQRT_2PI * _pw.exp(r * r * 0.5)


def _log_ndtr_deriv(x: Tensor, r: Tensor) -> Tensor:
    """The normal density over its distribution function, ``exp(-x^2/2 - log_ndtr(x))/sqrt(2
    pi)``, computed in the log domain so that it stays finite far in the lower tail."""
    return _pw.exp(-(x * x * 0.5) - r) / _SQRT_2PI


def _erfcx_deriv(x: Tensor, r: Tensor) -> Tensor:
    return 2 * x * r - _TWO_OVER_SQRT_PI


NDTRI = Op("special_ndtri", "SpecialNdtriBackward0", _special("ndtri"),
           lambda ctx, g: g * _ndtri_deriv(ctx.saved[0]), saves=("result",),
           jvp=elementwise(lambda ctx: _ndtri_deriv(ctx.result)))
LOG_NDTR = Op("special_log_ndtr", "SpecialLogNdtrBackward0", _special("log_ndtr"),
              lambda ctx, g: g * _log_ndtr_deriv(ctx.saved[0], ctx.saved[1]),
              saves=("self", "result"),
              jvp=elementwise(lambda ctx: _log_ndtr_deriv(ctx.inputs[0], ctx.result)))
ERFCX = Op("special_erfcx", "SpecialErfcxBackward0", _special("erfcx"),
           lambda ctx, g: g * _erfcx_deriv(ctx.saved[0], ctx.saved[1]), saves=("self", "result"),
           jvp=elementwise(lambda ctx: _erfcx_deriv(ctx.inputs[0], ctx.result)))

# ndtr is PyTorch's composite (1 + erf(x / sqrt(2))) / 2 of the Scalar overloads of mul and add
# (nodes MulBackward1 and AddBackward1, which Python's ``x * 0.5`` does not record); the
# Scalar mul is statistics.py's MUL_SCALAR.
ADD_SCALAR = Op("add.Scalar", "AddBackward1",
                lambda x, other: (x + other).astype(x.dtype, copy=False),
                lambda ctx, g: g, args=("other",), jvp=lambda ctx, t: t)


# ---------------------------------------------------------------------------- entr
def _entr_fwd(x: np.ndarray) -> np.ndarray:
    r = _special("entr")(x)
    return np.where(np.isnan(x), x, r)


def _entr_deriv(x: Tensor) -> Tensor:
    return -(1 + _pw.log(x))


ENTR = Op("special_entr", "SpecialEntrBackward0", _entr_fwd,
          lambda ctx, g: g * _entr_deriv(_x(ctx)), saves=("self",),
          jvp=elementwise(lambda ctx: _entr_deriv(ctx.inputs[0])))


# ---------------------------------------------------------------------------- zeta
def _zeta_fwd(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    import scipy.special
    r = np.asarray(scipy.special.zeta(x, q)).astype(np.result_type(x, q), copy=False)
    return np.where(np.isposinf(q), np.asarray(np.nan, r.dtype), r)   # PyTorch: NaN at q = inf


def _fw_not_implemented(name: str) -> Callable:
    def jvp(ctx, *tangents):
        raise NotImplementedError(
            f"Trying to use forward AD with {name} that does not support it because it has not "
            "been implemented yet.\nPlease file an issue to PyTorch at "
            "https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that "
            "we can prioritize its implementation or submit a PR adding the implementation to "
            "derivatives.yaml")
    return jvp


def _not_differentiable(what: str) -> NotImplementedError:
    return NotImplementedError(f"the derivative for '{what}' is not implemented.")


def _zeta_other_grad(g: Tensor, x: Any, q: Tensor) -> Tensor:
    """d/dq zeta(x, q) = -x zeta(x + 1, q)."""
    return -g * x * zeta(x + 1, q)


def _zeta_vjp(ctx, g):
    x, q = ctx.saved
    if ctx.needs_input_grad(0):
        raise _not_differentiable("zeta")
    return None, _zeta_other_grad(g, x, q)


def _zeta_self_scalar_vjp(ctx, g):
    x, q = ctx.saved
    return _zeta_other_grad(g, x, q)


def _zeta_other_scalar_vjp(ctx, g):
    raise _not_differentiable("zeta")


# PyTorch differentiates zeta(x, q) in q only (x: an error), and not in forward mode.
ZETA = Op("special_zeta", "SpecialZetaBackward0", _zeta_fwd, _zeta_vjp, saves=("self", "other"),
          inputs=("self", "other"), jvp=_fw_not_implemented("special_zeta"))
ZETA_SELF_SCALAR = Op("special_zeta", "SpecialZetaBackward1",
                      lambda q, x: _zeta_fwd(np.asarray(x, q.dtype), q),
                      _zeta_self_scalar_vjp, saves=("self", "other"), inputs=("other",),
                      args=("self",), jvp=_fw_not_implemented("special_zeta"))
ZETA_OTHER_SCALAR = Op("special_zeta", "SpecialZetaBackward2",
                       lambda x, q: _zeta_fwd(x, np.asarray(q, x.dtype)),
                       _zeta_other_scalar_vjp, args=("other",),
                       jvp=_fw_not_implemented("special_zeta"))


# ---------------------------------------------------------------------------- mvlgamma
def _mvlgamma_fwd(x: np.ndarray, p: int) -> np.ndarray:
    v = x.astype(np.float32) if x.dtype in _LOW else x
    out = sum(_un._lgamma_fwd(v - np.asarray(i / 2, v.dtype)) for i in range(p))
    out = out + np.asarray(p * (p - 1) / 4 * _LOG_PI, v.dtype)
    return np.asarray(out).astype(x.dtype, copy=False)


def _mvlgamma_deriv(x: Tensor, p: int) -> Tensor:
    d = _un.digamma(x)
    for i in range(1, p):
        d = d + _un.digamma(x - i / 2)
    return d


MVLGAMMA = Op("mvlgamma", "MvlgammaBackward0", _mvlgamma_fwd,
              lambda ctx, g: g * _mvlgamma_deriv(ctx.saved[1], ctx.saved[0]),
              saves=("p", "self"), args=("p",),
              jvp=elementwise(lambda ctx: _mvlgamma_deriv(ctx.inputs[0], ctx._args[0])))


# ---------------------------------------------------------------------------- igamma
def _igamma_fwd(name: str) -> Callable:
    def fwd(a: np.ndarray, x: np.ndarray) -> np.ndarray:
        import scipy.special
        f = getattr(scipy.special, name)
        dt = a.dtype
        if dt in _LOW:
            a, x = a.astype(np.float32), x.astype(np.float32)
        return np.asarray(f(a, x)).astype(dt, copy=False)
    return fwd


def _igamma_density(a: Tensor, x: Tensor) -> Tensor:
    """d/dx of the regularized lower incomplete gamma function P(a, x)."""
    return _pw.exp((a - 1) * _pw.log(x) - x - _un.lgamma(a))


def _igamma_vjp(sign: float, name: str) -> Callable:
    def vjp(ctx, g):
        a, x = ctx.saved
        if ctx.needs_input_grad(0):
            raise _not_differentiable(f"{name}: input")
        return None, sign * g * _igamma_density(a, x)
    return vjp


# Differentiable in ``other`` only, and not in forward mode (as in PyTorch).
IGAMMA = Op("igamma", "IgammaBackward0", _igamma_fwd("gammainc"), _igamma_vjp(1.0, "igamma"),
            saves=("self", "other"), inputs=("self", "other"), jvp=_fw_not_implemented("igamma"))
IGAMMAC = Op("igammac", "IgammacBackward0", _igamma_fwd("gammaincc"),
             _igamma_vjp(-1.0, "igammac"), saves=("self", "other"), inputs=("self", "other"),
             jvp=_fw_not_implemented("igammac"))


# ---------------------------------------------------------------------------- public functions
def _refuse(kernel: str, x: np.ndarray, half: bool) -> None:
    """PyTorch has no CPU kernel for complex inputs (nor float16/bfloat16 when ``half``)."""
    if x.dtype.kind == "c" or half and x.dtype in _LOW:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")


def _float(x: np.ndarray) -> np.ndarray:
    return to_float(x) if x.dtype.kind in "biu" else x


def _unary(op: Op, kernel: str, half: bool, doc: str) -> Callable:
    def fn(input: Tensor) -> Tensor:
        x = input._data
        _refuse(kernel, x, half)
        return apply(op, (input,), (_float(x),))
    fn.__name__ = fn.__qualname__ = op.name.replace("special_", "")
    fn.__doc__ = doc
    return fn


i0 = _unary(I0, "i0_vml_cpu", False, """Modified Bessel function of the first kind, order 0.

    >>> import ndgrad
    >>> ndgrad.i0(ndgrad.tensor([0.0])).tolist()
    [1.0]
    """)
i0e = _unary(I0E, "i0e_cpu", False, """Exponentially scaled ``i0``: ``exp(-|x|) i0(x)``.

    >>> import ndgrad
    >>> ndgrad.special.i0e(ndgrad.tensor([0.0])).tolist()
    [1.0]
    """)
i1: Callable[..., Tensor]
i1 = _unary(I1, "i1_cpu", False, """Modified Bessel function of the first kind, order 1.

    >>> import ndgrad
    >>> ndgrad.special.i1(ndgrad.tensor([0.0])).tolist()
    [0.0]
    """)
i1e: Callable[..., Tensor]
i1e = _unary(I1E, "i1e_cpu", False, """Exponentially scaled ``i1``: ``exp(-|x|) i1(x)``.

    >>> import ndgrad
    >>> ndgrad.special.i1e(ndgrad.tensor([0.0])).tolist()
    [0.0]
    """)
ndtri = _unary(NDTRI, "ndtri_cpu", True, """Inverse of the standard normal distribution function.

    >>> import ndgrad
    >>> ndgrad.special.ndtri(ndgrad.tensor([0.5])).tolist()
    [0.0]
    """)
log_ndtr = _unary(LOG_NDTR, "log_ndtr_cpu", True, """Log of the standard normal distribution
    function, accurate in the lower tail.

    >>> import ndgrad
    >>> round(ndgrad.special.log_ndtr(ndgrad.tensor([0.0])).item(), 4)
    -0.6931
    """)
erfcx = _unary(ERFCX, "erfcx_cpu", True, """Scaled complementary error function
    ``exp(x^2) erfc(x)``.

    >>> import ndgrad
    >>> ndgrad.special.erfcx(ndgrad.tensor([0.0])).tolist()
    [1.0]
    """)
entr = _unary(ENTR, "entr_cpu", False, """Elementwise entropy term ``-x log(x)`` (0 at 0, -inf
    below 0).

    >>> import ndgrad
    >>> ndgrad.special.entr(ndgrad.tensor([0.0, 1.0, -1.0])).tolist()
    [0.0, -0.0, -inf]
    """)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal distribution function, ``(1 + erf(x / sqrt(2))) / 2``.

    >>> import ndgrad
    >>> ndgrad.special.ndtr(ndgrad.tensor([0.0])).tolist()
    [0.5]
    """
    x = input._data
    _refuse("erf_vml_cpu", x, False)
    if x.dtype.kind in "biu":
        input = input.to(_dtype.get_default_dtype())
    y = apply(MUL_SCALAR, (input,), (input._data,), (_SQRT1_2,))
    y = _un.erf(y)
    y = apply(ADD_SCALAR, (y,), (y._data,), (1,))
    return apply(MUL_SCALAR, (y,), (y._data,), (0.5,))


def zeta(input: Any, other: Any) -> Tensor:
    """Hurwitz zeta function ``sum_k (k + other) ** -input`` (no derivative, as in PyTorch).

    >>> import ndgrad
    >>> round(ndgrad.special.zeta(ndgrad.tensor([2.0]), 1.0).item(), 4)
    1.6449
    """
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"special_zeta() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__})")
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        a, b = (_float(d) for d in _promote(input, other))
        _refuse("zeta_cpu", a, True)
        return apply(ZETA, (input, other), (a, b))
    if isinstance(input, Tensor):
        a = _float(input._data)
        _refuse("zeta_cpu", a, True)
        return apply(ZETA_OTHER_SCALAR, (input,), (a,), (other,))
    b = _float(other._data)
    _refuse("zeta_cpu", b, True)
    return apply(ZETA_SELF_SCALAR, (other,), (b,), (input,))


def _promote(a: Tensor, b: Tensor) -> tuple:
    from ._util import promote_pair
    return promote_pair(a, b)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of digamma (``n`` >= 0).

    >>> import ndgrad
    >>> round(ndgrad.polygamma(1, ndgrad.tensor([1.0])).item(), 4)
    1.6449
    """
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = input._data
    _refuse("polygamma", x, False)
    return apply(_un.POLYGAMMA, (input,), (_float(x),), (int(n),))


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """Multivariate log-gamma function of dimension ``p``, ``sum_i lgamma(x - i/2) + p(p-1)/4
    log(pi)``.

    >>> import ndgrad
    >>> ndgrad.mvlgamma(ndgrad.tensor([1.0]), 1).tolist()
    [0.0]
    """
    x = input._data
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    _refuse("arange_cpu", x, False)
    return apply(MVLGAMMA, (input,), (_float(x),), (int(p),))


def _igamma_public(op: Op, kernel: str) -> Callable:
    def fn(input: Tensor, other: Tensor) -> Tensor:
        a, b = _promote(input, other)
        if a.dtype.kind in "biu" or a.dtype.kind == "c":
            raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                      f"'{_dtype._FROM_NP[a.dtype]._torch_name}'")
        return apply(op, (input, other), (a, b))
    fn.__name__ = fn.__qualname__ = op.name
    return fn


igamma = _igamma_public(IGAMMA, "igamma_cpu")
igamma.__doc__ = """Regularized lower incomplete gamma function ``P(input, other)``
    (differentiable in ``other`` only, as in PyTorch).

    >>> import ndgrad
    >>> round(ndgrad.igamma(ndgrad.tensor([1.0]), ndgrad.tensor([1.0])).item(), 4)
    0.6321
    """
igammac = _igamma_public(IGAMMAC, "igammac_cpu")
igammac.__doc__ = """Regularized upper incomplete gamma function ``Q(input, other) = 1 - P``.

    >>> import ndgrad
    >>> round(ndgrad.igammac(ndgrad.tensor([1.0]), ndgrad.tensor([1.0])).item(), 4)
    0.3679
    """


# ---------------------------------------------------------------------------- no derivative
def _spherical_j0(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sin(x) / x
    return np.where(x == 0, 1.0, np.where(np.isinf(x), 0.0, r))


def _airy_ai(x: np.ndarray) -> np.ndarray:
    import scipy.special
    r = scipy.special.airy(x)[0]
    # SciPy gives NaN far out on the positive axis, where Ai underflows to 0 (PyTorch's value).
    return np.where(np.isnan(r) & np.isfinite(x) & (x > 0), 0.0, r)


def _forward_only(kernel: str, f: Any, doc: str) -> Callable:
    """A function PyTorch computes without a derivative: the result never requires grad."""
    def fn(input: Tensor) -> Tensor:
        x = input._data
        _refuse(kernel + "_cpu", x, True)
        xf = _float(x)
        if callable(f):
            out = f(xf)
        else:
            import scipy.special
            out = getattr(scipy.special, f)(xf)
        return _wrap(np.asarray(out).astype(xf.dtype, copy=False))
    fn.__name__ = fn.__qualname__ = kernel
    fn.__doc__ = doc + f"""

    >>> import ndgrad
    >>> ndgrad.special.{kernel}(ndgrad.tensor([1.0])).requires_grad
    False
    """
    return fn


bessel_j0 = _forward_only("bessel_j0", "j0", "Bessel function of the first kind, order 0.")
bessel_j1 = _forward_only("bessel_j1", "j1", "Bessel function of the first kind, order 1.")
bessel_y0 = _forward_only("bessel_y0", "y0", "Bessel function of the second kind, order 0.")
bessel_y1 = _forward_only("bessel_y1", "y1", "Bessel function of the second kind, order 1.")
modified_bessel_i0 = _forward_only("modified_bessel_i0", "i0",
                                   "Modified Bessel function of the first kind, order 0.")
modified_bessel_i1 = _forward_only("modified_bessel_i1", "i1",
                                   "Modified Bessel function of the first kind, order 1.")
modified_bessel_k0 = _forward_only("modified_bessel_k0", "k0",
                                   "Modified Bessel function of the second kind, order 0.")
modified_bessel_k1 = _forward_only("modified_bessel_k1", "k1",
                                   "Modified Bessel function of the second kind, order 1.")
scaled_modified_bessel_k0 = _forward_only("scaled_modified_bessel_k0", "k0e",
                                          "``exp(x) k0(x)``.")
scaled_modified_bessel_k1 = _forward_only("scaled_modified_bessel_k1", "k1e",
                                          "``exp(x) k1(x)``.")
spherical_bessel_j0 = _forward_only("spherical_bessel_j0", _spherical_j0,
                                    "Spherical Bessel function of the first kind, order 0.")
airy_ai = _forward_only("airy_ai", _airy_ai, "Airy function Ai.")


# ---------------------------------------------------------------------------- polynomials
# Orthogonal polynomials p_n(x) of ``torch.special`` (no derivative in PyTorch). The degree ``n``
# is a tensor or number, truncated toward zero as an integer; a negative (or NaN) degree gives
# 0. Each is evaluated by its three-term recurrence ``p_{k+1} = a_k(x) p_k - b_k p_{k-1}`` from
# ``p_0 = 1`` and ``p_1``.
def _cheb_step(k, x, p1, p0):
    return 2 * x * p1 - p0


_POLYNOMIALS = {
    # name: (p_1(x), step(k, x, p_k, p_{k-1}) -> p_{k+1}, argument map)
    "chebyshev_polynomial_t": (lambda x: x, _cheb_step, None),
    "chebyshev_polynomial_u": (lambda x: 2 * x, _cheb_step, None),
    "chebyshev_polynomial_v": (lambda x: 2 * x - 1, _cheb_step, None),
    "chebyshev_polynomial_w": (lambda x: 2 * x + 1, _cheb_step, None),
    "shifted_chebyshev_polynomial_t": (lambda x: x, _cheb_step, True),
    "shifted_chebyshev_polynomial_u": (lambda x: 2 * x, _cheb_step, True),
    "shifted_chebyshev_polynomial_v": (lambda x: 2 * x - 1, _cheb_step, True),
    "shifted_chebyshev_polynomial_w": (lambda x: 2 * x + 1, _cheb_step, True),
    "hermite_polynomial_h": (lambda x: 2 * x, lambda k, x, p1, p0: 2 * x * p1 - 2 * k * p0,
                             None),
    "hermite_polynomial_he": (lambda x: x, lambda k, x, p1, p0: x * p1 - k * p0, None),
    "laguerre_polynomial_l": (lambda x: 1 - x,
                              lambda k, x, p1, p0: ((2 * k + 1 - x) * p1 - k * p0) / (k + 1),
                              None),
    "legendre_polynomial_p": (lambda x: x,
                              lambda k, x, p1, p0: ((2 * k + 1) * x * p1 - k * p0) / (k + 1),
                              None),
}


def _polynomial_fwd(name: str, x: np.ndarray, n: np.ndarray) -> np.ndarray:
    first, step, shifted = _POLYNOMIALS[name]
    dt = x.dtype
    x, n = np.broadcast_arrays(x, n)
    with np.errstate(invalid="ignore"):
        k = np.where(np.isnan(n), -1, np.trunc(np.nan_to_num(n))).astype(np.int64)
    t = 2 * x - 1 if shifted else x
    p0 = np.ones(x.shape, dt)
    p1 = first(t).astype(dt, copy=False)
    out = np.where(k == 0, p0, np.where(k == 1, p1, np.zeros((), dt)))
    top = int(k.max()) if k.size else 0
    with np.errstate(all="ignore"):
        for j in range(1, top):
            p0, p1 = p1, step(j, t, p1, p0).astype(dt, copy=False)
            out = np.where(k == j + 1, p1, out)
    return out


def _polynomial(name: str) -> Callable:
    def fn(input: Any, n: Any) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special_{name}() received an invalid combination of arguments - "
                            f"got ({type(input).__name__}, {type(n).__name__})")
        if isinstance(input, Tensor) and isinstance(n, Tensor):
            dt = np.dtype(_promote(input, n)[0].dtype)
        else:
            dt = (input if isinstance(input, Tensor) else n)._data.dtype
        if dt.kind in "biu":
            dt = _dtype.get_default_dtype().np
        _refuse(name + "_cpu", np.zeros(0, dt), True)
        a = input._data if isinstance(input, Tensor) else input
        b = n._data if isinstance(n, Tensor) else n
        return _wrap(_polynomial_fwd(name, np.asarray(a).astype(dt), np.asarray(b).astype(dt)))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""``{name.replace('_', ' ')}`` of degree ``n`` at ``input`` (no derivative).

    >>> import ndgrad
    >>> ndgrad.special.{name}(ndgrad.tensor([0.5]), 0).tolist()
    [1.0]
    """
    return fn


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _polynomial("hermite_polynomial_h")
hermite_polynomial_he = _polynomial("hermite_polynomial_he")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l")
legendre_polynomial_p = _polynomial("legendre_polynomial_p")


# ---------------------------------------------------------------------------- batching rules
def _install_batching() -> None:
    from ._batching import RULES, _pointwise
    for op in (I0, I0E, I1, I1E, NDTRI, LOG_NDTR, ERFCX, ENTR, MVLGAMMA,
               ADD_SCALAR, IGAMMA, IGAMMAC, ZETA, ZETA_SELF_SCALAR, ZETA_OTHER_SCALAR):
        RULES[op] = _pointwise()


_install_batching()
