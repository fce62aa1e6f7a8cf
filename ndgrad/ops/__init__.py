"""The op table: every differentiable operator, declared once (see ``_dispatch.Op``).

It sits above the graph runtime (``ndgrad/autograd``'s nodes, engine, saved tensors) and below
the autograd API; see Note [Layers] in ndgrad/autograd/__init__.py.

Example:
    >>> import ndgrad
    >>> from ndgrad.ops import REGISTRY
    >>> [op.node_name for op in REGISTRY["mul"]]
    ['MulBackward0', 'MulBackward0']
"""

from ._dispatch import REGISTRY, Op, apply, grad_accumulator, gradient_edge  # noqa: F401
from . import views_inplace  # noqa: F401  (binds view tracking into the dispatcher)
from .linalg import bmm, dot, matmul, mm, mv, norm, vector_norm  # noqa: F401
from .pointwise import (  # noqa: F401
    _copy_like_layout, abs, add, allclose, bitwise_and, bitwise_not, bitwise_or, bitwise_xor,
    clamp, clamp_max, clamp_min, clone, conj, cos, div, eq, equal, exp, ge, gt, isclose,
    isfinite, isinf, isnan, le,
    log, logical_and, logical_not, logical_or, logical_xor, isposinf, isneginf, isreal, lt,
    maximum, minimum, mul, ne, neg, pow,
    real_part, reciprocal, relu, rsub, sgn, sigmoid, sign, sin, sqrt, sub, tanh, to, where)
from .reduction import (  # noqa: F401
    amax, amin, argmax, argmin, gather, max, mean, min, prod, std, sum, sum_to_size, var)
from .shape import (  # noqa: F401
    cat, chunk, contiguous, expand, expand_as, flatten, getitem, index_put, index_select,
    movedim, narrow,
    permute, reshape, select, split, squeeze, stack, t, transpose, tril, triu, unbind, unsqueeze,
    view)
from .unary import (  # noqa: F401
    exp2, expm1, log2, log10, log1p, rsqrt, square, tan, asin, acos, atan, sinh, cosh, asinh,
    acosh, atanh, erf, erfc, erfinv, lgamma, digamma, floor, ceil, trunc, frac, round, deg2rad,
    rad2deg, logit, sinc, angle, positive, signbit, nan_to_num)
from .scan import cumsum  # noqa: F401,E402
from .softmax import log_softmax, logsumexp, softmax  # noqa: F401,E402
# ---- binary (issue 8) ----
from . import binary  # noqa: F401,E402
# ---- end binary ----
# ---- reduce (issue 8) ----
from .scan import cummax, cummin, cumprod, logcumsumexp  # noqa: F401,E402
from .sort import (  # noqa: F401,E402
    argsort, kthvalue, median, mode, msort, nanmedian, nanquantile, quantile, sort, topk)
from .statistics import (  # noqa: F401,E402
    aminmax, corrcoef, count_nonzero, cov, cumulative_trapezoid, diff, dist, nanmean, nansum,
    renorm, std_mean, trace, trapezoid, trapz, var_mean)
# ---- end reduce ----
# ---- products and solvers (issue 8) ----
from . import products, linalg_solve  # noqa: F401,E402
# ---- end products and solvers (issue 8) ----
# ---- decompositions (issue 8) ----
from . import linalg_decomp  # noqa: F401,E402
# ---- end decompositions ----
from . import _batching  # noqa: E402

_batching.install()   # batching rules for every op above (Note [Batched backward])
# ---- indexing (issue 8) ----
from . import indexing  # noqa: F401,E402  (registers its batching rules, after install)

# ---- rearrange (issue 8) ----
from . import rearrange  # noqa: F401,E402  (registers its batching rules itself)

# ---- rest of issue 8: sampling, counting, gradient ----
from . import sampling, counting, gradient as _gradient_mod  # noqa: F401,E402  (after install)
# ---- end rest of issue 8 ----
# ---- sparse autograd (issue 10) ----
from . import sparse_coo  # noqa: E402
sparse_coo._install()
from . import sparse_compressed, sparse_compressed_products  # noqa: E402
sparse_compressed._install()
sparse_compressed_products._install()
# ---- end sparse autograd ----
# ---- custom operator namespaces (ndgrad.library; ndgrad.ops.mylib.f as torch.ops.mylib.f) ----
from ._namespaces import NAMESPACES as _NAMESPACES  # noqa: E402


def __getattr__(name: str):
    ns = _NAMESPACES.get(name)
    if ns is not None:
        return ns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
# ---- end custom operator namespaces ----
