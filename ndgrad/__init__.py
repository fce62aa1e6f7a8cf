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
    promote_types, result_type, set_default_dtype, short, uint8, uint16, uint32, uint64)
from .tensor import (  # noqa: F401
    Size, Tensor, device, get_default_device, is_tensor, set_default_device)
from ._layout import (  # noqa: F401
    channels_last, channels_last_3d, contiguous_format, jagged, layout, memory_format,
    preserve_format, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided)
newaxis = None       # torch.newaxis (indexing with None adds a dimension)
from . import ops  # noqa: E402
from . import _tensor_methods  # noqa: F401,E402  (binds Tensor methods)
from .legacy_tensor_types import (  # noqa: F401,E402
    BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,
    IntTensor, LongTensor, ShortTensor, set_default_tensor_type)
from ._creation import (  # noqa: F401,E402
    arange, as_tensor, empty, empty_like, eye, from_dlpack, from_numpy, full, full_like, linspace,
    manual_seed, ones, ones_like, rand, rand_like, randint, randint_like, randn, randn_like,
    seed, tensor, zeros, zeros_like)
from ._creation import get_rng_state, initial_seed, randperm, set_rng_state  # noqa: F401,E402
from ._generator import Generator, default_generator  # noqa: F401,E402
from . import random  # noqa: F401,E402
from .serialization import load, save  # noqa: F401,E402
from .ops.sparse_coo import sparse_coo_tensor  # noqa: F401,E402
from .ops.sparse_compressed import (  # noqa: F401,E402
    sparse_compressed_tensor, sparse_csc_tensor, sparse_csr_tensor)
from . import sparse  # noqa: F401,E402
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
from . import _C, overrides  # noqa: F401,E402  (the __torch_function__ protocol)
autograd._load()   # the autograd API, now that the op table exists (Note [Layers])
from .legacy_tensor_types import Variable as _Variable  # noqa: E402
autograd.Variable = _Variable  # type: ignore[attr-defined]  # old code's autograd.Variable
from . import backends, cpu, cuda  # noqa: F401,E402
from . import amp  # noqa: F401,E402
from .amp import GradScaler  # noqa: F401,E402  (torch.GradScaler is torch.amp.GradScaler)
from .amp.autocast_mode import (  # noqa: F401,E402
    autocast, clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype,
    get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
    is_autocast_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype,
    set_autocast_cpu_enabled, set_autocast_dtype, set_autocast_enabled)
from .cpu import amp as _cpu_amp  # noqa: F401,E402  (ndgrad.cpu.amp, as torch.cpu.amp)
from .cuda import amp as _cuda_amp  # noqa: F401,E402  (ndgrad.cuda.amp, as torch.cuda.amp)
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
isposinf, isneginf, isreal = ops.isposinf, ops.isneginf, ops.isreal

# ---- indexing (issue 8) ----
from .ops.indexing import (  # noqa: F401,E402
    argwhere, bucketize, index_add, index_copy, index_fill, index_put, index_reduce, isin,
    masked_scatter, masked_select, nonzero, nonzero_static, put, scatter, scatter_add,
    scatter_reduce,
    searchsorted, take, take_along_dim)
from ._tensor_methods import index_put_  # noqa: F401,E402

# ---- rearrange (issue 8) ----
from .ops.rearrange import (  # noqa: F401,E402
    adjoint, alias_copy, as_strided_copy, as_strided_scatter, atleast_1d, atleast_2d,
    atleast_3d, block_diag, broadcast_shapes, broadcast_tensors, broadcast_to, cartesian_prod,
    column_stack, combinations, conj_physical, diag, diag_embed, diagflat, diagonal_copy,
    diagonal_scatter, dsplit, dstack, expand_copy, fill, flip, fliplr, flipud, hsplit, hstack,
    meshgrid, moveaxis, narrow_copy, permute_copy, ravel, repeat_interleave, resolve_conj,
    resolve_neg, roll, rot90, row_stack, select_scatter, slice_scatter, split_with_sizes,
    split_with_sizes_copy, squeeze_copy, swapdims, t_copy, tensor_split, tile, transpose_copy,
    unbind_copy, unflatten, unfold_copy, unsafe_chunk, unsafe_split, unsafe_split_with_sizes,
    unsqueeze_copy, view_as_complex, view_as_real, view_copy, vsplit, vstack)
from ._tensor_methods import conj_physical_  # noqa: F401,E402

# ---- binary (issue 8) ----
from .ops.binary import (  # noqa: F401,E402
    atan2, arctan2, remainder, fmod, hypot, fmax, fmin, copysign, xlogy, logaddexp, logaddexp2,
    lerp, addcmul, addcdiv, ldexp, float_power, heaviside, nextafter, true_divide, rsub, frexp,
    complex, polar, bitwise_left_shift, bitwise_right_shift, gcd, lcm, logical_xor,
    bitwise_and, bitwise_or, bitwise_xor)
from ._tensor_methods import xlogy_, ldexp_, gcd_, lcm_  # noqa: F401,E402
# ---- end binary ----
# ---- reduce (issue 8) ----
from .ops import (  # noqa: F401,E402
    aminmax, argsort, corrcoef, count_nonzero, cov, cummax, cummin, cumprod,
    cumulative_trapezoid, diff, dist, kthvalue, logcumsumexp, median, mode, msort, nanmean,
    nanmedian, nanquantile, nansum, quantile, renorm, sort, std_mean, topk, trace, trapezoid,
    trapz, var_mean)
from . import return_types  # noqa: F401,E402
from ._threads import (  # noqa: F401,E402
    get_num_interop_threads, get_num_threads, set_num_interop_threads, set_num_threads)
from ._settings import (  # noqa: F401,E402
    are_deterministic_algorithms_enabled, e, finfo, get_float32_matmul_precision,
    get_printoptions, iinfo, inf, is_deterministic_algorithms_warn_only_enabled, nan, pi,
    set_float32_matmul_precision, set_printoptions, use_deterministic_algorithms)
from . import masked  # noqa: F401,E402
# ---- end reduce ----

# ---- fft / special (issue 8) ----
from .ops.special import i0, igamma, igammac, mvlgamma, polygamma  # noqa: F401,E402
from ._tensor_methods import i0_  # noqa: F401,E402
from .ops.fft import istft, stft  # noqa: F401,E402
from . import fft as fft  # noqa: E402
from . import special as special  # noqa: E402
from . import signal as signal  # noqa: E402
# ---- end fft / special (issue 8) ----

# ---- products and solvers (issue 8) ----
from . import linalg  # noqa: E402
from .ops.products import (  # noqa: F401,E402
    addbmm, addmm, addmv, addr, baddbmm, chain_matmul, einsum, ger, inner, kron, outer,
    tensordot, vdot)
from .ops.products import cross  # noqa: F401,E402
from .ops.linalg_solve import (  # noqa: F401,E402
    cholesky_inverse, cholesky_solve, logdet, lu_unpack, triangular_solve)
det = linalg.det
slogdet = ops.linalg_solve.slogdet_old
cholesky = ops.linalg_solve.cholesky_old
lu = ops.linalg_solve.lu_old
lu_solve = ops.linalg_solve.lu_solve_old
matrix_exp = linalg.matrix_exp
matrix_power = linalg.matrix_power
inverse = linalg.inv
addmv_ = Tensor.addmv_      # torch.addmv_(input, mat, vec): PyTorch's one module-level form
# ---- end products and solvers (issue 8) ----

# ---- decompositions (issue 8) ----
from . import linalg  # noqa: F401,E402
from .ops.linalg_decomp import (  # noqa: F401,E402
    geqrf, ormqr, pca_lowrank, pinverse, qr, svd, svd_lowrank)
from ._lobpcg import lobpcg  # noqa: F401,E402  (Note [lobpcg])
# ---- end decompositions ----
# ---- cdist (issue 9) ----
from .ops.nn_distance import cdist  # noqa: F401,E402
# ---- end cdist ----

# ---- rest of issue 8: sampling, counting, factories, gradient ----
from .ops.sampling import bernoulli, multinomial, normal  # noqa: F401,E402
from .ops.counting import (  # noqa: F401,E402
    bincount, histc, histogram, histogramdd, tril_indices, triu_indices, unique,
    unique_consecutive, unravel_index)
from .ops.gradient import gradient  # noqa: F401,E402
from ._factories import (  # noqa: F401,E402
    empty_permuted, empty_strided, logspace, scalar_tensor)
from ._factories import resize_as_  # noqa: F401,E402
from ._tensor_methods import as_strided_  # noqa: F401,E402
# ---- end rest of issue 8 ----

# ---- compat (session 22): torch's other spellings and small helpers (ndgrad/_compat.py) ----
from ._compat import (  # noqa: F401,E402
    asarray, can_cast, concat, concatenate, detach, eig, frombuffer, get_deterministic_debug_mode,
    get_device, get_device_module, is_complex, is_conj, is_distributed, is_floating_point,
    is_inference, is_neg, is_storage, is_warn_always_enabled, lstsq, matrix_rank, numel, range,
    set_anomaly_enabled, set_deterministic_debug_mode, set_flush_denormal, set_warn_always,
    solve, sym_float, sym_int, sym_ite, sym_max, sym_min, sym_not, sym_sqrt, sym_sum, symeig,
    vander)
from .utils.dlpack import to_dlpack  # noqa: F401,E402
from ._compat_random import binomial, poisson  # noqa: F401,E402
from ._control_flow import _assert, cond, fork, wait, while_loop  # noqa: F401,E402
from ._compat_sparse import dsmm, hspmm, saddmm, smm, spmm, sspaddmm  # noqa: F401,E402
from ._legacy_storage import (  # noqa: F401,E402
    BFloat16Storage, BoolStorage, ByteStorage, CharStorage, ComplexDoubleStorage,
    ComplexFloatStorage, DoubleStorage, FloatStorage, HalfStorage, IntStorage, LongStorage,
    ShortStorage)
from ._compat_windows import (  # noqa: F401,E402
    bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window)
from ._tensor_methods import _function_of_method as _fm  # noqa: E402
arccos_, arccosh_, arcsin_, arcsinh_, arctan_, arctanh_, negative_, fix_ = (
    _fm(n) for n in ("arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
                     "negative_", "fix_"))
del _fm
# ---- end compat ----
from .ops.quantize import (  # noqa: F401,E402  (session 26)
    fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine)

from . import _signatures  # noqa: E402

_signatures.install(__import__(__name__))   # Note [Declared signatures]

from .tensor import typename  # noqa: F401,E402

# The nn kernels torch also has at its top level (listed here so ``import ndgrad`` need not
# import nn; ndgrad/nn/toplevel.py defines them and tests/test_nn_toplevel.py checks the list).
_NN_TOPLEVEL = frozenset((
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "bilinear", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "cosine_similarity", "pairwise_distance", "pdist", "selu", "selu_", "celu", "celu_", "prelu",
    "rrelu", "rrelu_", "hardshrink", "threshold", "threshold_", "avg_pool1d",
    "adaptive_avg_pool1d", "max_pool1d", "max_pool2d", "max_pool3d", "dropout", "dropout_",
    "alpha_dropout", "feature_alpha_dropout", "embedding", "layer_norm", "group_norm",
    "batch_norm", "instance_norm"))
# ---- compat (session 22): more nn kernels at the top level (ndgrad/nn/toplevel_compat.py,
# tests/test_compat_nn_toplevel.py checks the list) ----
_NN_TOPLEVEL_COMPAT = frozenset((
    "binary_cross_entropy_with_logits", "cosine_embedding_loss", "ctc_loss",
    "hinge_embedding_loss", "kl_div", "margin_ranking_loss", "poisson_nll_loss",
    "triplet_margin_loss", "embedding_bag", "constant_pad_nd", "convolution", "conv_tbc",
    "grid_sampler", "affine_grid_generator", "adaptive_max_pool1d", "max_pool1d_with_indices",
    "rms_norm", "native_layer_norm", "native_batch_norm", "native_dropout", "feature_dropout",
    "feature_dropout_", "alpha_dropout_", "feature_alpha_dropout_", "frobenius_norm",
    "nuclear_norm", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "segment_reduce", "norm_except_dim", "lstm", "gru", "rnn_tanh", "rnn_relu"))
# ---- end compat ----


def __getattr__(name: str):
    """``ndgrad.nn``, ``ndgrad.optim``, ``ndgrad.utils``, ``ndgrad.func``, ``ndgrad.viz``,
    ``ndgrad.jit``, ``ndgrad.compiler``, ``ndgrad.profiler``, ``ndgrad.multiprocessing``,
    ``ndgrad.distributions``, ``ndgrad.quasirandom``, ``ndgrad.testing``,
    ``ndgrad.accelerator``, ``ndgrad.xpu``, ``ndgrad.hub``, ``ndgrad.library``, ``ndgrad.mps``,
    ``ndgrad.fx``, ``ndgrad.export``, ``ndgrad._dynamo``, ``ndgrad.compile``, ``ndgrad.vmap``
    and the ``ndgrad._foreach_*`` ops load on first use: ``import ndgrad`` stays fast, and
    ``ndgrad.nn.Linear`` still works after a bare ``import ndgrad``."""
    import importlib
    if name in ("nn", "optim", "utils", "func", "viz", "jit", "compiler", "profiler",
                "multiprocessing", "distributions", "quasirandom", "testing", "accelerator",
                "xpu", "hub", "library", "mps", "fx", "export", "_dynamo"):
        return importlib.import_module(f"{__name__}.{name}")
    if name == "vmap":               # torch.vmap is torch.func.vmap
        return importlib.import_module(f"{__name__}.func").vmap
    if name in ("UntypedStorage", "TypedStorage"):   # ndgrad/storage.py
        return getattr(importlib.import_module(f"{__name__}.storage"), name)
    if name == "compile":            # ndgrad.compile (ndgrad/jit/api.py), loaded on first use
        return importlib.import_module(f"{__name__}.jit.api").compile
    if name in _NN_TOPLEVEL:         # torch.conv2d, torch.dropout ... (ndgrad/nn/toplevel.py)
        return importlib.import_module(f"{__name__}.nn.toplevel").get(name)
    if name in _NN_TOPLEVEL_COMPAT:  # torch.kl_div, torch.convolution ... (compat, session 22)
        return importlib.import_module(f"{__name__}.nn.toplevel_compat").get(name)
    if name.startswith("_foreach_"):  # torch._foreach_add_ ... (ndgrad/_foreach.py)
        functions = importlib.import_module(f"{__name__}._foreach").FUNCTIONS
        if name in functions:
            return functions[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from .ops import _autocast  # noqa: E402

for _name in _autocast.FP32_TOP:  # float32 under CPU autocast (Note [Autocast])
    globals()[_name] = _autocast.fp32_op(globals()[_name])
del _name

# Functions written in Python without a checking wrapper take part in the __torch_function__
# protocol too (Note [Torch function protocol]).
from ._torch_function import name_operators as _name_operators  # noqa: E402
from ._torch_function import python_functions as _python_functions  # noqa: E402
_name_operators()
_python_functions(globals(), """atleast_1d atleast_2d atleast_3d block_diag broadcast_tensors
cartesian_prod chain_matmul einsum meshgrid norm split tensordot unsafe_split_with_sizes lu
lu_solve lu_unpack matrix_rank solve lstsq unravel_index""".split())
_python_functions(vars(autograd), ["backward", "grad"], "ndgrad.autograd")

from . import torch_version as torch_version, version as version  # noqa: E402
__version__ = version.__version__   # a str comparing as a version (ndgrad/torch_version.py)
_dtype._ARMED[0] = True   # Note [Barebones unsigned dtypes]: tables are built, watch from here
del _dtype
