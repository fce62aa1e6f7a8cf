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
from typing import Any

from . import _dtype
from ._signature import wrap
from .tensor import Tensor

_FACTORY_KW = "ScalarType? dtype=None, Any device=None, bool requires_grad=False"
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


def _entries(block: str) -> list:
    return [line.strip() for line in block.strip().splitlines() if line.strip()]


def _name(schema: str) -> str:
    return schema.split("(", 1)[0]


def install(module: ModuleType) -> None:
    """Replace ``module.<name>`` and ``Tensor.<name>`` by their checking wrappers."""
    for schema in _entries(FUNCTIONS_AND_METHODS):
        name = _name(schema)
        # A function PyTorch has that ndgrad only had as a method: the method is the function.
        impl = getattr(module, name, None) or getattr(Tensor, name)
        fn = wrap(schema, _unwrapped(impl))
        setattr(module, name, fn)
        if hasattr(Tensor, name):
            setattr(Tensor, name, wrap(schema.replace("Tensor input", "Tensor self", 1),
                                       _unwrapped(getattr(Tensor, name)), method=True))
    for schema in _entries(FUNCTIONS):
        name = _name(schema)
        setattr(module, name, wrap(schema, _unwrapped(getattr(module, name))))
    for schema in _entries(METHODS):
        name = _name(schema)
        setattr(Tensor, name, wrap(schema, _unwrapped(getattr(Tensor, name)), method=True))
    Tensor.view = _view_overloads(Tensor.view)


def _view_overloads(view_sizes: Any) -> Any:
    """``x.view(*size)`` or ``x.view(dtype)`` (PyTorch's two overloads of Tensor.view)."""
    from .ops.shape import view_dtype

    def view(self: Tensor, *size: Any) -> Tensor:
        if len(size) == 1 and type(size[0]) is _dtype.dtype:
            return view_dtype(self, size[0])
        return view_sizes(self, *size)
    view.__doc__ = view_sizes.__doc__
    view.__name__ = view.__qualname__ = "view"
    view.__signature_schema__ = "view(Tensor self, int... size) | view(Tensor self, dtype)"
    view.__wrapped__ = _unwrapped(view_sizes)
    return view


def _unwrapped(fn: Any) -> Any:
    """The implementation behind a checking wrapper (install may run twice)."""
    return fn.__wrapped__ if hasattr(fn, "__signature_schema__") else fn
