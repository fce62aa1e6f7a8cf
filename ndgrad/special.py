"""``ndgrad.special``: PyTorch's ``torch.special`` namespace.

Example:
    >>> import ndgrad
    >>> ndgrad.special.xlogy(ndgrad.tensor([0.0]), ndgrad.tensor([0.0])).tolist()
    [0.0]
    >>> ndgrad.special.expit(ndgrad.tensor([0.0])).tolist()
    [0.5]
"""

from __future__ import annotations

from ._signature import wrap

# ---- binary (issue 8) ----
from .ops import binary as _binary  # noqa: E402

xlogy = wrap("xlogy(Tensor|Scalar input, Tensor|Scalar other)", _binary.xlogy, out=True)
xlog1py = wrap("xlog1py(Tensor|Scalar input, Tensor|Scalar other)", _binary.xlog1py, out=True)
# ---- end binary ----
# ---- special functions (issue 8) ----
from . import ops as _ops  # noqa: E402
from ._signatures import SPECIAL_FUNCTIONS, install_namespace  # noqa: E402
from .ops.special import (  # noqa: E402,F401
    airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, entr, erfcx, i0, i0e, i1, i1e,
    log_ndtr, modified_bessel_i0, modified_bessel_i1, modified_bessel_k0, modified_bessel_k1,
    ndtr, ndtri, polygamma, scaled_modified_bessel_k0, scaled_modified_bessel_k1,
    spherical_bessel_j0, zeta)
from .ops.special import (  # noqa: E402,F401
    chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v,
    chebyshev_polynomial_w, hermite_polynomial_h, hermite_polynomial_he, laguerre_polynomial_l,
    legendre_polynomial_p, shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_w)
from .ops.special import igamma as gammainc, igammac as gammaincc  # noqa: E402,F401
from .ops.special import mvlgamma as multigammaln  # noqa: E402,F401
from .ops.unary import (  # noqa: E402,F401
    digamma, erf, erfc, erfinv, exp2, expm1, log1p, logit, sinc)
from .ops.unary import digamma as psi, lgamma as gammaln  # noqa: E402,F401
from .ops.softmax import logsumexp  # noqa: E402,F401

expit = _ops.sigmoid


def round(input, *, decimals=0):  # noqa: A001
    """Elementwise rounding half to even to ``decimals`` places (``torch.special.round``).

    >>> import ndgrad
    >>> ndgrad.special.round(ndgrad.tensor([0.5, 1.5])).tolist()
    [0.0, 2.0]
    """
    if decimals == 0:   # PyTorch's kernel (and its refusal of integers) for decimals=0
        _ops.pointwise._not_implemented_for("round_vml_cpu", input._data, "biuc")
    return _ops.unary.round(input, decimals=decimals)


def softmax(input, dim, *, dtype=None):
    """``ndgrad.softmax`` (``dtype`` keyword-only, as in ``torch.special``).

    >>> import ndgrad
    >>> ndgrad.special.softmax(ndgrad.tensor([0.0, 0.0]), 0).tolist()
    [0.5, 0.5]
    """
    return _ops.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """``ndgrad.log_softmax`` (``dtype`` keyword-only, as in ``torch.special``).

    >>> import ndgrad
    >>> ndgrad.special.log_softmax(ndgrad.tensor([0.0, 0.0]), 0).exp().tolist()
    [0.5, 0.5]
    """
    return _ops.log_softmax(input, dim, dtype)


install_namespace(globals(), SPECIAL_FUNCTIONS)
# ---- end special functions (issue 8) ----
