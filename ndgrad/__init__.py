"""ndgrad: automatic differentiation for NumPy with the semantics of PyTorch's autograd.

Example:
    >>> import ndgrad
    >>> w = ndgrad.randn(3, requires_grad=True)
    >>> loss = (w * w).sum()
    >>> loss.backward()
    >>> ((w.grad - 2 * w).abs() < 1e-6).all().item()
    True
"""

from . import _dtype
from ._dtype import (  # noqa: F401
    bfloat16, bool, cdouble, cfloat, complex64, complex128, double, dtype, float, float16,
    float32, float64, get_default_dtype, half, int, int8, int16, int32, int64, long,
    promote_types, result_type, set_default_dtype, short, uint8)
from .tensor import (  # noqa: F401
    Size, Tensor, device, get_default_device, is_tensor, set_default_device)
from ._layout import (  # noqa: F401
    channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format)
from . import ops  # noqa: E402
from . import _tensor_methods  # noqa: F401,E402  (binds Tensor methods)
from ._creation import (  # noqa: F401,E402
    arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, linspace,
    manual_seed, ones, ones_like, rand, rand_like, randint, randint_like, randn, randn_like,
    seed, tensor, zeros, zeros_like)
from ._tensor_methods import (  # noqa: F401,E402  (module-level in-place functions)
    abs_, clamp_, clamp_max_, clamp_min_, clip_, cos_, detach_, exp_, fill_, log_, neg_,
    reciprocal_, relu_, sigmoid_, sin_, sqrt_, tanh_, zero_)
from .ops import (  # noqa: F401,E402
    amax, amin, cumsum, index_select, log_softmax, logsumexp, softmax, std, var)
from .ops import (  # noqa: F401,E402
    allclose, equal, isclose, tril, triu)
from .ops import (  # noqa: F401,E402
    abs, add, argmax, argmin, bmm, cat, chunk, clamp, clone, conj, cos, div, dot, eq, exp,
    expand, flatten, gather, ge, gt, le, log, logical_and,
    logical_not, logical_or, lt, matmul, max, maximum, mean, min, minimum, mm, movedim, mul,
    mv, narrow, ne, neg, norm, permute, pow, prod, reciprocal, relu, reshape, select, sigmoid, sign,
    sin, split, sqrt, squeeze, stack, sub, sum, t, tanh, transpose, unbind, unsqueeze, where)
from .ops.unary import (  # noqa: F401,E402
    exp2, expm1, log2, log10, log1p, rsqrt, square, tan, asin, acos, atan, sinh, cosh, asinh,
    acosh, atanh, erf, erfc, erfinv, lgamma, digamma, floor, ceil, trunc, frac, round, deg2rad,
    rad2deg, logit, sinc, angle, positive, signbit, nan_to_num)
from ._tensor_methods import (  # noqa: F401,E402
    exp2_, expm1_, log2_, log10_, log1p_, rsqrt_, square_, tan_, asin_, acos_, atan_, sinh_,
    cosh_, asinh_, acosh_, atanh_, erf_, erfc_, floor_, ceil_, trunc_, frac_, round_, deg2rad_,
    rad2deg_, logit_, sinc_, nan_to_num_)
from . import autograd as autograd  # noqa: E402
from . import backends, cuda  # noqa: F401,E402
from .autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa

clip = clamp
all = ops.reduction.all_  # noqa: A001
any = ops.reduction.any_  # noqa: A001
diagonal = ops.shape.diagonal
as_strided = ops.shape.as_strided
real = ops.shape.real
imag = ops.shape.imag
inference_mode = autograd.grad_mode.inference_mode
is_inference_mode_enabled = autograd.grad_mode.is_inference_mode_enabled
isnan = ops.isnan
isfinite = ops.isfinite
isinf = ops.isinf
bitwise_not = ops.bitwise_not

# ---- decompositions (issue 8) ----
from . import linalg  # noqa: F401,E402
from .ops.linalg_decomp import (  # noqa: F401,E402
    geqrf, ormqr, pca_lowrank, pinverse, qr, svd, svd_lowrank)
# ---- end decompositions ----

from . import _signatures  # noqa: E402

_signatures.install(__import__(__name__))   # Note [Declared signatures]

__version__ = "0.1.0"
del _dtype
