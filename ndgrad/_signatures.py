"""The declared signature of every public function and Tensor method (Note [Declared
signatures] in ``_signature.py``).

One line per entry point, in the form PyTorch prints its signatures. ``FUNCTIONS_AND_METHODS``
entries are both ``ndgrad.name`` and ``Tensor.name`` (the Tensor is the first argument);
``FUNCTIONS`` are ``ndgrad.name`` only and ``METHODS`` ``Tensor.name`` only (or a method whose
arguments differ from the function's, like ``x.view(2, 3)`` against ``ndgrad.reshape(x,
(2, 3))``). ``install`` replaces each public name by its checking wrapper; the op modules keep
the unchecked implementations for internal use (``wrapper.__wrapped__``).

Example:
    >>> import ndgrad
    >>> ndgrad.ones(2, 3).sum(1.5)
    Traceback (most recent call last):
    ...
    TypeError: sum(): argument 'dim' (position 1) must be tuple of ints, not float
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Optional

from . import _compat_windows, _dtype
from ._signature import OUT_FUNCTIONS, wrap
from .ops.shape import view_dtype
from .tensor import Tensor

_FACTORY_KW = ("ScalarType? dtype=None, Layout? layout=None, Any device=None, "
               "bool? pin_memory=None, bool requires_grad=False")
_LIKE_KW = _FACTORY_KW + ", Any memory_format=None"

FUNCTIONS_AND_METHODS = """
abs(Tensor input)
neg(Tensor input)
exp(Tensor input)
log(Tensor input)
sin(Tensor input)
cos(Tensor input)
tanh(Tensor input)
sigmoid(Tensor input)
relu(Tensor input)
sqrt(Tensor input)
sign(Tensor input)
sgn(Tensor input)
conj(Tensor input)
reciprocal(Tensor input)
isnan(Tensor input)
isinf(Tensor input)
isfinite(Tensor input)
logical_not(Tensor input)
bitwise_not(Tensor input)
add(Tensor|Scalar input, Tensor|Scalar other, *, Scalar alpha=1)
sub(Tensor|Scalar input, Tensor|Scalar other, *, Scalar alpha=1)
mul(Tensor|Scalar input, Tensor|Scalar other)
div(Tensor|Scalar input, Tensor|Scalar other, *, str? rounding_mode=None)
floor_divide(Tensor|Scalar input, Tensor|Scalar other)
pow(Tensor|Scalar input, Tensor|Scalar exponent)
eq(Tensor input, Tensor|Scalar other)
ne(Tensor input, Tensor|Scalar other)
lt(Tensor input, Tensor|Scalar other)
le(Tensor input, Tensor|Scalar other)
gt(Tensor input, Tensor|Scalar other)
ge(Tensor input, Tensor|Scalar other)
maximum(Tensor input, Tensor other)
minimum(Tensor input, Tensor other)
logical_and(Tensor input, Tensor other)
logical_or(Tensor input, Tensor other)
isposinf(Tensor input)
isneginf(Tensor input)
isreal(Tensor input)
clamp(Tensor input, Tensor|Scalar? min=None, Tensor|Scalar? max=None)
clip(Tensor input, Tensor|Scalar? min=None, Tensor|Scalar? max=None)
clamp_min(Tensor input, Tensor|Scalar min)
clamp_max(Tensor input, Tensor|Scalar max)
masked_fill(Tensor input, Tensor mask, Tensor|Scalar value)
sum(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)
mean(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)
prod(Tensor input, int dim=None, bool keepdim=False, *, ScalarType? dtype=None)
max(Tensor input, Tensor|int dim=None, bool keepdim=None)
min(Tensor input, Tensor|int dim=None, bool keepdim=None)
argmax(Tensor input, int? dim=None, bool keepdim=False)
argmin(Tensor input, int? dim=None, bool keepdim=False)
all(Tensor input, int[1]? dim=None, bool keepdim=False)
any(Tensor input, int[1]? dim=None, bool keepdim=False)
gather(Tensor input, int dim, Tensor index)
index_select(Tensor input, int dim, Tensor index)
softmax(Tensor input, int dim, ScalarType? dtype=None)
log_softmax(Tensor input, int dim, ScalarType? dtype=None)
logsumexp(Tensor input, int[1] dim, bool keepdim=False)
cumsum(Tensor input, int dim, *, ScalarType? dtype=None)
var(Tensor input, Any dim=None, Any unbiased=None, bool keepdim=False, *, Scalar? correction=None)
std(Tensor input, Any dim=None, Any unbiased=None, bool keepdim=False, *, Scalar? correction=None)
amax(Tensor input, int[1] dim=(), bool keepdim=False)
amin(Tensor input, int[1] dim=(), bool keepdim=False)
matmul(Tensor input, Tensor other)
mm(Tensor input, Tensor mat2)
bmm(Tensor input, Tensor mat2)
mv(Tensor input, Tensor vec)
dot(Tensor input, Tensor tensor)
transpose(Tensor input, int dim0, int dim1)
swapaxes(Tensor input, int axis0, int axis1)
t(Tensor input)
squeeze(Tensor input, int[1] dim=None)
unsqueeze(Tensor input, int dim)
flatten(Tensor input, int start_dim=0, int end_dim=-1)
narrow(Tensor input, int dim, Any start, int length)
select(Tensor input, int dim, int index)
chunk(Tensor input, int chunks, int dim=0)
unbind(Tensor input, int dim=0)
movedim(Tensor input, int[1] source, int[1] destination)
diagonal(Tensor input, int offset=0, int dim1=0, int dim2=1)
as_strided(Tensor input, int[] size, int[] stride, int? storage_offset=None)
clone(Tensor input, *, Any memory_format=None)
equal(Tensor input, Tensor other)
allclose(Tensor input, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False)
isclose(Tensor input, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False)
triu(Tensor input, int diagonal=0)
tril(Tensor input, int diagonal=0)
exp2(Tensor input)
expm1(Tensor input)
log2(Tensor input)
log10(Tensor input)
log1p(Tensor input)
rsqrt(Tensor input)
square(Tensor input)
tan(Tensor input)
asin(Tensor input)
acos(Tensor input)
atan(Tensor input)
sinh(Tensor input)
cosh(Tensor input)
asinh(Tensor input)
acosh(Tensor input)
atanh(Tensor input)
erf(Tensor input)
erfc(Tensor input)
erfinv(Tensor input)
lgamma(Tensor input)
digamma(Tensor input)
floor(Tensor input)
ceil(Tensor input)
trunc(Tensor input)
frac(Tensor input)
round(Tensor input, *, int? decimals=None)
deg2rad(Tensor input)
rad2deg(Tensor input)
logit(Tensor input, float? eps=None)
sinc(Tensor input)
angle(Tensor input)
positive(Tensor input)
signbit(Tensor input)
nan_to_num(Tensor input, float? nan=0.0, float? posinf=None, float? neginf=None)
"""

FUNCTIONS = f"""
reshape(Tensor input, int[] shape)
permute(Tensor input, int[] dims)
expand(Tensor input, int... size)
cat(Tensor[] tensors, int dim=0)
stack(Tensor[] tensors, int dim=0)
where(Tensor condition, Tensor|Scalar input=None, Tensor|Scalar other=None)
real(Tensor input)
imag(Tensor input)
zeros(int... size, *, {_FACTORY_KW})
ones(int... size, *, {_FACTORY_KW})
empty(int... size, *, {_FACTORY_KW}, Any memory_format=None)
full(int[] size, Scalar fill_value, *, {_FACTORY_KW})
arange(Scalar start, Scalar end=None, Scalar step=1, *, {_FACTORY_KW})
linspace(Tensor|Scalar start, Tensor|Scalar end, int steps, *, {_FACTORY_KW})
eye(int n, int m=None, *, {_FACTORY_KW})
rand(int... size, *, {_FACTORY_KW}, Any generator=None)
randn(int... size, *, {_FACTORY_KW}, Any generator=None)
randint(Any low=None, Any high=None, Any size=None, *, Any generator=None, {_FACTORY_KW})
randperm(int n, *, Any generator=None, {_FACTORY_KW})
zeros_like(Tensor input, *, {_LIKE_KW})
ones_like(Tensor input, *, {_LIKE_KW})
empty_like(Tensor input, *, {_LIKE_KW})
rand_like(Tensor input, *, {_LIKE_KW})
randn_like(Tensor input, *, {_LIKE_KW})
full_like(Tensor input, Scalar fill_value, *, {_LIKE_KW})
"""

METHODS = """
reshape(Tensor self, int... shape)
view(Tensor self, int... size)
permute(Tensor self, int... dims)
expand(Tensor self, int... size)
sum_to_size(Tensor self, int... size)
where(Tensor self, Tensor condition, Tensor|Scalar other)
expand_as(Tensor self, Tensor other)
view_as(Tensor self, Tensor other)
reshape_as(Tensor self, Tensor other)
type_as(Tensor self, Tensor other)
unfold(Tensor self, int dimension, int size, int step)
add_(Tensor self, Tensor|Scalar other, *, Scalar alpha=1)
sub_(Tensor self, Tensor|Scalar other, *, Scalar alpha=1)
mul_(Tensor self, Tensor|Scalar other)
div_(Tensor self, Tensor|Scalar other, *, str? rounding_mode=None)
pow_(Tensor self, Tensor|Scalar exponent)
fill_(Tensor self, Tensor|Scalar value)
masked_fill_(Tensor self, Tensor mask, Tensor|Scalar value)
clamp_(Tensor self, Tensor|Scalar? min=None, Tensor|Scalar? max=None)
clip_(Tensor self, Tensor|Scalar? min=None, Tensor|Scalar? max=None)
clamp_min_(Tensor self, Tensor|Scalar min)
clamp_max_(Tensor self, Tensor|Scalar max)
copy_(Tensor self, Tensor|Scalar src, bool non_blocking=False)
triu_(Tensor self, int diagonal=0)
abs_(Tensor self)
neg_(Tensor self)
exp_(Tensor self)
log_(Tensor self)
sin_(Tensor self)
cos_(Tensor self)
sqrt_(Tensor self)
relu_(Tensor self)
sigmoid_(Tensor self)
tanh_(Tensor self)
reciprocal_(Tensor self)
zero_(Tensor self)
tril_(Tensor self, int diagonal=0)
exp2_(Tensor self)
expm1_(Tensor self)
log2_(Tensor self)
log10_(Tensor self)
log1p_(Tensor self)
rsqrt_(Tensor self)
square_(Tensor self)
tan_(Tensor self)
asin_(Tensor self)
acos_(Tensor self)
atan_(Tensor self)
sinh_(Tensor self)
cosh_(Tensor self)
asinh_(Tensor self)
acosh_(Tensor self)
atanh_(Tensor self)
erf_(Tensor self)
erfc_(Tensor self)
erfinv_(Tensor self)
lgamma_(Tensor self)
digamma_(Tensor self)
floor_(Tensor self)
ceil_(Tensor self)
trunc_(Tensor self)
frac_(Tensor self)
round_(Tensor self, *, int? decimals=None)
deg2rad_(Tensor self)
rad2deg_(Tensor self)
logit_(Tensor self, float? eps=None)
sinc_(Tensor self)
nan_to_num_(Tensor self, float? nan=0.0, float? posinf=None, float? neginf=None)
"""

# ---- indexing (issue 8) ----
FUNCTIONS_AND_METHODS += "\n" + "\n".join([
    "scatter(Tensor input, int dim, Tensor index, Tensor|Scalar src=None, Scalar value=None, "
    "*, str? reduce=None)",
    "scatter_add(Tensor input, int dim, Tensor index, Tensor src)",
    "scatter_reduce(Tensor input, int dim, Tensor index, Tensor src, str reduce, *, "
    "bool include_self=True)",
    "index_add(Tensor input, int dim, Tensor index, Tensor source, *, Scalar alpha=1)",
    "index_copy(Tensor input, int dim, Tensor index, Tensor source)",
    "index_fill(Tensor input, int dim, Tensor index, Tensor|Scalar value)",
    "index_reduce(Tensor input, int dim, Tensor index, Tensor source, str reduce, *, "
    "bool include_self=True)",
    "masked_select(Tensor input, Tensor mask)",
    "masked_scatter(Tensor input, Tensor mask, Tensor source)",
    "take(Tensor input, Tensor index)",
    "take_along_dim(Tensor input, Tensor indices, int? dim=None)",
    "put(Tensor input, Tensor index, Tensor source, bool accumulate=False)",
    "nonzero(Tensor input, *, bool as_tuple=False)",
    "nonzero_static(Tensor input, *, int size, int fill_value=-1)",
    "argwhere(Tensor input)",
    "index_put(Tensor input, Any indices, Tensor values, bool accumulate=False)",
]) + "\n"
FUNCTIONS += "\n" + "\n".join([
    "isin(Tensor|Scalar elements, Tensor|Scalar test_elements, *, bool assume_unique=False, "
    "bool invert=False)",
    "searchsorted(Tensor sorted_sequence, Tensor|Scalar input, *, bool out_int32=False, "
    "bool right=False, str? side=None, Tensor? sorter=None)",
    "bucketize(Tensor|Scalar input, Tensor boundaries, *, bool out_int32=False, bool right=False)",
]) + "\n"
# ---- end indexing ----


# ---- rearrange (issue 8) ----
FUNCTIONS_AND_METHODS += """
fliplr(Tensor input)
flipud(Tensor input)
roll(Tensor input, int[1] shifts, int[1] dims=())
rot90(Tensor input, int k=1, int[] dims=None)
repeat_interleave(Tensor input, Tensor|int repeats=None, int? dim=None, *, int? output_size=None)
ravel(Tensor input)
swapdims(Tensor input, int dim0, int dim1)
moveaxis(Tensor input, int[1] source, int[1] destination)
adjoint(Tensor input)
unflatten(Tensor input, int dim, int[] sizes)
diag(Tensor input, int diagonal=0)
diag_embed(Tensor input, int offset=0, int dim1=-2, int dim2=-1)
diagflat(Tensor input, int offset=0)
tensor_split(Tensor input, Any indices_or_sections, int dim=0)
hsplit(Tensor input, Any indices_or_sections)
vsplit(Tensor input, Any indices_or_sections)
dsplit(Tensor input, Any indices_or_sections)
split_with_sizes(Tensor input, int[] split_sizes, int dim=0)
unsafe_split(Tensor input, int split_size, int dim=0)
unsafe_chunk(Tensor input, int chunks, int dim=0)
narrow_copy(Tensor input, int dim, int start, int length)
select_scatter(Tensor input, Tensor src, int dim, int index)
slice_scatter(Tensor input, Tensor src, int dim=0, int? start=None, int? end=None, int step=1)
diagonal_scatter(Tensor input, Tensor src, int offset=0, int dim1=0, int dim2=1)
as_strided_scatter(Tensor input, Tensor src, int[] size, int[] stride, int? storage_offset=None)
conj_physical(Tensor input)
resolve_conj(Tensor input)
resolve_neg(Tensor input)
broadcast_to(Tensor input, int[] size)
"""
FUNCTIONS += """
flip(Tensor input, int[] dims)
tile(Tensor input, int[] dims)
combinations(Tensor input, int r=2, bool with_replacement=False)
hstack(Tensor[] tensors)
vstack(Tensor[] tensors)
row_stack(Tensor[] tensors)
dstack(Tensor[] tensors)
column_stack(Tensor[] tensors)
view_as_real(Tensor input)
view_as_complex(Tensor input)
fill(Tensor input, Tensor|Scalar value)
alias_copy(Tensor input)
expand_copy(Tensor input, int[] size, *, bool implicit=False)
permute_copy(Tensor input, int[] dims)
view_copy(Tensor input, int[] size)
squeeze_copy(Tensor input, int[1] dim=None)
unsqueeze_copy(Tensor input, int dim)
t_copy(Tensor input)
transpose_copy(Tensor input, int dim0, int dim1)
unbind_copy(Tensor input, int dim=0)
split_with_sizes_copy(Tensor input, int[] split_sizes, int dim=0)
diagonal_copy(Tensor input, int offset=0, int dim1=0, int dim2=1)
unfold_copy(Tensor input, int dimension, int size, int step)
as_strided_copy(Tensor input, int[] size, int[] stride, int? storage_offset=None)
"""
METHODS += """
flip(Tensor self, int... dims)
tile(Tensor self, int... dims)
repeat(Tensor self, int... repeats)
unsafe_split_with_sizes(Tensor self, int[] split_sizes, int dim=0)
conj_physical_(Tensor self)
"""


# ---- binary (issue 8) ----
FUNCTIONS_AND_METHODS += """
atan2(Tensor input, Tensor other)
arctan2(Tensor input, Tensor other)
remainder(Tensor|Scalar input, Tensor|Scalar other)
fmod(Tensor input, Tensor|Scalar other)
hypot(Tensor input, Tensor other)
fmax(Tensor input, Tensor other)
fmin(Tensor input, Tensor other)
copysign(Tensor input, Tensor|Scalar other)
xlogy(Tensor|Scalar input, Tensor|Scalar other)
logaddexp(Tensor input, Tensor other)
logaddexp2(Tensor input, Tensor other)
lerp(Tensor input, Tensor end, Tensor|Scalar weight)
addcmul(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1)
addcdiv(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1)
ldexp(Tensor input, Tensor other)
float_power(Tensor|Scalar input, Tensor|Scalar exponent)
heaviside(Tensor input, Tensor values)
nextafter(Tensor input, Tensor other)
true_divide(Tensor|Scalar input, Tensor|Scalar other)
frexp(Tensor input)
bitwise_left_shift(Tensor|Scalar input, Tensor|Scalar other)
bitwise_right_shift(Tensor|Scalar input, Tensor|Scalar other)
gcd(Tensor input, Tensor other)
lcm(Tensor input, Tensor other)
bitwise_and(Tensor|Scalar input, Tensor|Scalar other)
bitwise_or(Tensor|Scalar input, Tensor|Scalar other)
bitwise_xor(Tensor|Scalar input, Tensor|Scalar other)
logical_xor(Tensor input, Tensor other)
"""
FUNCTIONS += """
rsub(Tensor input, Tensor|Scalar other, *, Scalar alpha=1)
complex(Tensor real, Tensor imag)
polar(Tensor abs, Tensor angle)
"""
METHODS += """
atan2_(Tensor self, Tensor other)
arctan2_(Tensor self, Tensor other)
remainder_(Tensor self, Tensor|Scalar other)
fmod_(Tensor self, Tensor|Scalar other)
hypot_(Tensor self, Tensor other)
copysign_(Tensor self, Tensor|Scalar other)
xlogy_(Tensor self, Tensor|Scalar other)
lerp_(Tensor self, Tensor end, Tensor|Scalar weight)
addcmul_(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1)
addcdiv_(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1)
ldexp_(Tensor self, Tensor other)
float_power_(Tensor self, Tensor|Scalar exponent)
heaviside_(Tensor self, Tensor values)
nextafter_(Tensor self, Tensor other)
true_divide_(Tensor self, Tensor|Scalar other)
bitwise_left_shift_(Tensor self, Tensor|Scalar other)
bitwise_right_shift_(Tensor self, Tensor|Scalar other)
gcd_(Tensor self, Tensor other)
lcm_(Tensor self, Tensor other)
floor_divide_(Tensor self, Tensor|Scalar other)
bitwise_and_(Tensor self, Tensor|Scalar other)
bitwise_or_(Tensor self, Tensor|Scalar other)
bitwise_xor_(Tensor self, Tensor|Scalar other)
logical_and_(Tensor self, Tensor other)
logical_or_(Tensor self, Tensor other)
logical_xor_(Tensor self, Tensor other)
eq_(Tensor self, Tensor|Scalar other)
ne_(Tensor self, Tensor|Scalar other)
lt_(Tensor self, Tensor|Scalar other)
le_(Tensor self, Tensor|Scalar other)
gt_(Tensor self, Tensor|Scalar other)
ge_(Tensor self, Tensor|Scalar other)
"""
# ---- end binary ----


# ---- reduce (issue 8) ----
_QUANTILE = "int? dim=None, bool keepdim=False, *, str interpolation='linear')"
_VAR_MEAN = "Any dim=None, Any unbiased=None, bool keepdim=False, *, Scalar? correction=None)"
FUNCTIONS_AND_METHODS += f"""
aminmax(Tensor input, *, int? dim=None, bool keepdim=False)
nansum(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)
nanmean(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)
count_nonzero(Tensor input, int[1]? dim=None)
cumprod(Tensor input, int dim, *, ScalarType? dtype=None)
cummax(Tensor input, int dim)
cummin(Tensor input, int dim)
logcumsumexp(Tensor input, int dim)
sort(Tensor input, int dim=-1, bool descending=False, bool? stable=None)
argsort(Tensor input, int dim=-1, bool descending=False, bool stable=False)
msort(Tensor input)
topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True)
kthvalue(Tensor input, int k, int dim=-1, bool keepdim=False)
median(Tensor input, int? dim=None, bool keepdim=False)
nanmedian(Tensor input, int? dim=None, bool keepdim=False)
mode(Tensor input, int dim=-1, bool keepdim=False)
quantile(Tensor input, Tensor|float q, {_QUANTILE}
nanquantile(Tensor input, Tensor|float q, {_QUANTILE}
diff(Tensor input, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None)
trace(Tensor input)
cov(Tensor input, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None)
corrcoef(Tensor input)
renorm(Tensor input, Scalar p, int dim, Scalar maxnorm)
dist(Tensor input, Tensor other, Scalar p=2)
"""
FUNCTIONS += f"""
var_mean(Tensor input, {_VAR_MEAN}
std_mean(Tensor input, {_VAR_MEAN}
trapezoid(Tensor y, Tensor? x=None, *, Scalar? dx=None, int dim=-1)
trapz(Tensor y, Tensor? x=None, *, Scalar? dx=None, int dim=-1)
cumulative_trapezoid(Tensor y, Tensor? x=None, *, Scalar? dx=None, int dim=-1)
"""
METHODS += """
cumprod_(Tensor self, int dim, *, ScalarType? dtype=None)
renorm_(Tensor self, Scalar p, int dim, Scalar maxnorm)
"""
# ---- end reduce ----


# ---- fft / special (issue 8) ----
# The functions of the ``ndgrad.fft`` and ``ndgrad.special`` namespaces (named as PyTorch names
# them in its errors: ``fft_fft``, ``special_i0e``); ``install_namespace`` wraps them.
_FFT_1D = "(Tensor input, int? n=None, int dim=-1, str? norm=None)"
_FFT_2D = "(Tensor input, int[1]? s=None, int[1] dim=None, str? norm=None)"
_FFT_ND = "(Tensor input, int[1]? s=None, int[1]? dim=None, str? norm=None)"
_FREQ = f"(int n, float d=1.0, *, {_FACTORY_KW})"
FFT_FUNCTIONS = "\n".join(
    [f"fft_{n}{_FFT_1D}" for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")]
    + [f"fft_{n}{_FFT_2D}" for n in ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")]
    + [f"fft_{n}{_FFT_ND}" for n in ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")]
    + ["fft_fftshift(Tensor input, int[1]? dim=None)",
       "fft_ifftshift(Tensor input, int[1]? dim=None)",
       f"fft_fftfreq{_FREQ}", f"fft_rfftfreq{_FREQ}"])
SPECIAL_FUNCTIONS = """
special_i0(Tensor input)
special_i0e(Tensor input)
special_i1(Tensor input)
special_i1e(Tensor input)
special_ndtr(Tensor input)
special_ndtri(Tensor input)
special_log_ndtr(Tensor input)
special_erfcx(Tensor input)
special_entr(Tensor input)
special_zeta(Tensor|Scalar input, Tensor|Scalar other)
special_polygamma(int n, Tensor input)
special_multigammaln(Tensor input, int p)
special_digamma(Tensor input)
special_psi(Tensor input)
special_gammaln(Tensor input)
special_gammainc(Tensor input, Tensor other)
special_gammaincc(Tensor input, Tensor other)
special_expit(Tensor input)
special_exp2(Tensor input)
special_expm1(Tensor input)
special_log1p(Tensor input)
special_logit(Tensor input, float? eps=None)
special_sinc(Tensor input)
special_round(Tensor input, *, int decimals=0)
special_softmax(Tensor input, int dim, *, ScalarType? dtype=None)
special_log_softmax(Tensor input, int dim, *, ScalarType? dtype=None)
special_logsumexp(Tensor input, int[1] dim, bool keepdim=False)
special_erf(Tensor input)
special_erfc(Tensor input)
special_erfinv(Tensor input)
special_bessel_j0(Tensor input)
special_bessel_j1(Tensor input)
special_bessel_y0(Tensor input)
special_bessel_y1(Tensor input)
special_modified_bessel_i0(Tensor input)
special_modified_bessel_i1(Tensor input)
special_modified_bessel_k0(Tensor input)
special_modified_bessel_k1(Tensor input)
special_scaled_modified_bessel_k0(Tensor input)
special_scaled_modified_bessel_k1(Tensor input)
special_spherical_bessel_j0(Tensor input)
special_airy_ai(Tensor input)
"""
SPECIAL_FUNCTIONS += "\n".join(
    f"special_{p}(Tensor|Scalar input, Tensor|Scalar n)" for p in (
        "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
        "laguerre_polynomial_l", "legendre_polynomial_p"))
FUNCTIONS_AND_METHODS += """
i0(Tensor input)
mvlgamma(Tensor input, int p)
igamma(Tensor input, Tensor other)
igammac(Tensor input, Tensor other)
"""
_STFT = ("int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, "
         "bool center=True")
FUNCTIONS_AND_METHODS += (
    f"stft(Tensor input, {_STFT}, str pad_mode='reflect', bool normalized=False, "
    "bool? onesided=None, bool? return_complex=None)\n"
    f"istft(Tensor input, {_STFT}, bool normalized=False, bool? onesided=None, "
    "int? length=None, bool return_complex=False)\n")
FUNCTIONS += """
polygamma(int n, Tensor input)
"""
METHODS += """
polygamma(Tensor self, int n)
i0_(Tensor self)
polygamma_(Tensor self, int n)
mvlgamma_(Tensor self, int p)
igamma_(Tensor self, Tensor other)
igammac_(Tensor self, Tensor other)
"""
# ---- cdist (issue 9) ----
FUNCTIONS += """
cdist(Tensor x1, Tensor x2, float p=2.0, str? compute_mode=None)
"""
# ---- end cdist ----


_WINDOW_KW = ("bool sym=True, ScalarType? dtype=None, Any layout=None, Any device=None, "
              "bool requires_grad=False")
SIGNAL_WINDOWS_FUNCTIONS = "\n".join(
    [f"signal_windows_{w}(int M, *, {_WINDOW_KW})"
     for w in ("bartlett", "blackman", "cosine", "hamming", "hann", "nuttall")]
    + [f"signal_windows_exponential(int M, *, float? center=None, float tau=1.0, {_WINDOW_KW})",
       f"signal_windows_gaussian(int M, *, float std=1.0, {_WINDOW_KW})",
       f"signal_windows_general_cosine(int M, *, Any a, {_WINDOW_KW})",
       f"signal_windows_general_hamming(int M, *, float alpha=0.54, {_WINDOW_KW})",
       f"signal_windows_kaiser(int M, *, float beta=12.0, {_WINDOW_KW})"])


def install_namespace(namespace: dict, block: str, prefix: Optional[str] = "") -> None:
    """Replace each function of a namespace module (its ``globals()``) by its checking wrapper;
    the schema's name is PyTorch's (``fft_fft``), the attribute the short one (``fft``; or the
    name without ``prefix``; the name itself when ``prefix`` is None, as in
    ``ndgrad.nn.functional``)."""
    for schema in _entries(block):
        full = _name(schema)
        if prefix is None:
            short = full
        else:
            short = full[len(prefix):] if prefix else full.split("_", 1)[1]
        fn = wrap(schema, _unwrapped(namespace[short]),
                  out=prefix is not None and full in OUT_FUNCTIONS)
        fn.__name__ = short
        namespace[short] = fn
# ---- end fft / special (issue 8) ----


# ---- products and solvers (issue 8) ----
FUNCTIONS_AND_METHODS += """
addmm(Tensor input, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)
addmv(Tensor input, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1)
addr(Tensor input, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1)
addbmm(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1)
baddbmm(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1)
kron(Tensor input, Tensor other)
inner(Tensor input, Tensor other)
outer(Tensor input, Tensor vec2)
ger(Tensor input, Tensor vec2)
vdot(Tensor input, Tensor other)
cross(Tensor input, Tensor other, int? dim=None)
det(Tensor input)
logdet(Tensor input)
slogdet(Tensor input)
matrix_exp(Tensor input)
matrix_power(Tensor input, int n)
inverse(Tensor input)
cholesky(Tensor input, bool upper=False)
cholesky_inverse(Tensor input, bool upper=False)
cholesky_solve(Tensor input, Tensor input2, bool upper=False)
triangular_solve(Tensor input, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False)
"""  # noqa: E501
# ---- end products and solvers (issue 8) ----
# ---- decompositions (issue 8) ----
FUNCTIONS_AND_METHODS += """
qr(Tensor input, bool some=True)
svd(Tensor input, bool some=True, bool compute_uv=True)
pinverse(Tensor input, float rcond=1e-15)
geqrf(Tensor input)
ormqr(Tensor input, Tensor input2, Tensor input3, bool left=True, bool transpose=False)
"""
FUNCTIONS += """
svd_lowrank(Tensor A, int? q=6, int? niter=2, Tensor? M=None)
pca_lowrank(Tensor A, int? q=None, bool center=True, int niter=2)
"""
# ---- end decompositions ----

# ---- rest of issue 8: sampling, counting, factories, gradient ----
FUNCTIONS_AND_METHODS += """
bernoulli(Tensor input, float? p=None, *, Any generator=None)
multinomial(Tensor input, int num_samples, bool replacement=False, *, Any generator=None)
histc(Tensor input, int bins=100, Scalar min=0, Scalar max=0)
histogram(Tensor input, Any bins=100, *, Any range=None, Tensor? weight=None, bool density=False)
unique(Tensor input, bool sorted=True, bool return_inverse=False, bool return_counts=False, int? dim=None)
unique_consecutive(Tensor input, bool return_inverse=False, bool return_counts=False, int? dim=None)
bincount(Tensor input, Tensor? weights=None, int minlength=0)
"""  # noqa: E501
FUNCTIONS += f"""
normal(Tensor|float mean, Tensor|float std=1.0, int[]? size=None, *, Any generator=None, {_FACTORY_KW})
logspace(Tensor|Scalar start, Tensor|Scalar end, int steps, float base=10.0, *, {_FACTORY_KW})
histogramdd(Tensor input, Any bins=10, *, Any range=None, Tensor? weight=None, bool density=False)
tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=None, Any device=None, Layout? layout=None)
triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=None, Any device=None, Layout? layout=None)
gradient(Tensor input, *, Any spacing=None, Any dim=None, int edge_order=1)
scalar_tensor(Scalar s, *, {_FACTORY_KW})
empty_strided(int[] size, int[] stride, *, {_FACTORY_KW})
empty_permuted(int[] size, int[] physical_layout, *, {_FACTORY_KW})
"""  # noqa: E501
METHODS += f"""
bernoulli_(Tensor self, Tensor|float p=0.5, *, Any generator=None)
new_empty_strided(Tensor self, int[] size, int[] stride, *, {_FACTORY_KW})
resize_(Tensor self, int... size, *, Any memory_format=None)
resize_as_(Tensor self, Tensor the_template, *, Any memory_format=None)
"""  # noqa: E501
# ---- end rest of issue 8 ----

# ---- compat (session 22): torch's alias spellings (ndgrad/_compat_methods.py) ----
FUNCTIONS_AND_METHODS += """
absolute(Tensor input)
arccos(Tensor input)
arccosh(Tensor input)
arcsin(Tensor input)
arcsinh(Tensor input)
arctan(Tensor input)
arctanh(Tensor input)
negative(Tensor input)
fix(Tensor input)
divide(Tensor|Scalar input, Tensor|Scalar other, *, str? rounding_mode=None)
multiply(Tensor|Scalar input, Tensor|Scalar other)
subtract(Tensor|Scalar input, Tensor|Scalar other, *, Scalar alpha=1)
greater(Tensor input, Tensor|Scalar other)
greater_equal(Tensor input, Tensor|Scalar other)
less(Tensor input, Tensor|Scalar other)
less_equal(Tensor input, Tensor|Scalar other)
not_equal(Tensor input, Tensor|Scalar other)
is_same_size(Tensor input, Tensor other)
is_signed(Tensor input)
is_nonzero(Tensor input)
orgqr(Tensor input, Tensor input2)
"""
_WIN_KW = f"*, {_FACTORY_KW})"
FUNCTIONS += f"""
detach(Tensor input)
numel(Tensor input)
is_floating_point(Tensor input)
is_complex(Tensor input)
is_conj(Tensor input)
is_neg(Tensor input)
is_inference(Tensor input)
get_device(Tensor input)
is_distributed(Tensor input)
can_cast(ScalarType from_, ScalarType to)
vander(Tensor x, int? N=None, bool increasing=False)
poisson(Tensor input, Any generator=None)
binomial(Tensor count, Tensor prob, Any generator=None)
hann_window(int window_length, bool periodic=True, {_WIN_KW}
hamming_window(int window_length, bool periodic=True, float alpha=0.54, float beta=0.46, \
{_WIN_KW}
blackman_window(int window_length, bool periodic=True, {_WIN_KW}
bartlett_window(int window_length, bool periodic=True, {_WIN_KW}
kaiser_window(int window_length, bool periodic=True, float beta=12.0, {_WIN_KW}
concat(Tensor[] tensors, int dim=0)
concatenate(Tensor[] tensors, int dim=0)
"""
METHODS += """
divide_(Tensor self, Tensor|Scalar other, *, str? rounding_mode=None)
multiply_(Tensor self, Tensor|Scalar other)
subtract_(Tensor self, Tensor|Scalar other, *, Scalar alpha=1)
greater_(Tensor self, Tensor|Scalar other)
greater_equal_(Tensor self, Tensor|Scalar other)
less_(Tensor self, Tensor|Scalar other)
less_equal_(Tensor self, Tensor|Scalar other)
not_equal_(Tensor self, Tensor|Scalar other)
fill_diagonal_(Tensor self, Scalar fill_value, bool wrap=False)
hardshrink(Tensor self, Scalar lambd=0.5)
prelu(Tensor self, Tensor weight)
is_set_to(Tensor self, Tensor tensor)
"""
# ---- end compat ----

# ---- fake quantization (session 26, ndgrad/ops/quantize.py) ----
FUNCTIONS += """
fake_quantize_per_tensor_affine(Tensor input, Tensor|float scale, Tensor|int zero_point, \
int quant_min, int quant_max)
fake_quantize_per_channel_affine(Tensor input, Tensor scale, Tensor zero_point, int axis, \
int quant_min, int quant_max)
"""
# ---- end fake quantization ----


def _entries(block: str) -> list:
    return [line.strip() for line in block.strip().splitlines() if line.strip()]


def _name(schema: str) -> str:
    return schema.split("(", 1)[0]


def install(module: ModuleType) -> None:
    """Replace ``module.<name>`` and ``Tensor.<name>`` by their checking wrappers.

    An in-place method ``name_`` without a line of its own in ``METHODS`` takes the schema of
    ``name`` (the Tensor argument renamed ``self``)."""
    explicit = {_name(s) for s in _entries(METHODS)}
    for schema in _entries(FUNCTIONS_AND_METHODS):
        name = _name(schema)
        if name + "_" not in explicit and hasattr(Tensor, name + "_"):
            inplace = name + "_" + schema[len(name):].replace("Tensor input", "Tensor self", 1)
            setattr(Tensor, name + "_", wrap(inplace, _unwrapped(getattr(Tensor, name + "_")),
                                             method=True))
        # A function PyTorch has that ndgrad only had as a method: the method is the function.
        impl = getattr(module, name, None) or getattr(Tensor, name)
        fn = wrap(schema, _unwrapped(impl), out=name in OUT_FUNCTIONS)
        setattr(module, name, fn)
        if hasattr(Tensor, name):
            setattr(Tensor, name, wrap(schema.replace("Tensor input", "Tensor self", 1),
                                       _unwrapped(getattr(Tensor, name)), method=True))
    for schema in _entries(FUNCTIONS):
        name = _name(schema)
        setattr(module, name, wrap(schema, _unwrapped(getattr(module, name)),
                                   out=name in OUT_FUNCTIONS))
    for schema in _entries(METHODS):
        name = _name(schema)
        setattr(Tensor, name, wrap(schema, _unwrapped(getattr(Tensor, name)), method=True))
    Tensor.view = _view_overloads(Tensor.view)  # type: ignore[method-assign]  # binds it
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                 "kaiser_window"):      # the windows' overloads (torch's positional rules)
        setattr(module, name, _compat_windows.overloaded(getattr(module, name)))


def _view_overloads(view_sizes: Any) -> Any:
    """``x.view(*size)`` or ``x.view(dtype)`` (PyTorch's two overloads of Tensor.view)."""

    def view(self: Tensor, *size: Any, **keywords: Any) -> Tensor:
        if keywords:
            if not size and len(keywords) == 1 and "dtype" in keywords:    # x.view(dtype=...)
                d = keywords["dtype"]
                if not isinstance(d, _dtype.dtype):
                    t = type(d).__name__
                    raise TypeError(
                        f"view() received an invalid combination of arguments - got (dtype={t}, "
                        f"), but expected one of:\n * (torch.dtype dtype)\n      didn't match "
                        f"because some of the arguments have invalid types: (!dtype={t}!, )\n * "
                        f"(tuple of ints size)\n      didn't match because some of the keywords "
                        f"were incorrect: dtype\n")
                return view_dtype(self, d)
            return view_sizes(self, *size, **keywords)       # x.view(size=(2, 3)) too
        if len(size) == 1 and isinstance(size[0], _dtype.dtype):
            return view_dtype(self, size[0])
        return view_sizes(self, *size)
    fn: Any = view
    fn.__doc__ = view_sizes.__doc__
    fn.__name__ = fn.__qualname__ = "view"
    fn.__signature_schema__ = "view(Tensor self, int... size) | view(Tensor self, dtype)"
    fn.__wrapped__ = _unwrapped(view_sizes)
    return fn


def _unwrapped(fn: Any) -> Any:
    """The implementation behind a checking wrapper (install may run twice)."""
    return fn.__wrapped__ if hasattr(fn, "__signature_schema__") else fn
