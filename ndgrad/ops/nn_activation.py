"""nn op family: activation functions (``relu`` ... ``gelu``, ``softplus``, ``prelu``, ``rrelu``,
``glu``, ``softmin``/``softmax``/``log_softmax``, ``gumbel_softmax`` ...).

Note [Activation ops]
The elementwise activations PyTorch implements as one kernel (ELU, GELU, SiLU, Mish, Softplus,
Hardtanh, Hardswish, LeakyReLU, Threshold ...) are one ``Op`` each, built by ``_unary_op`` from
a NumPy forward and the derivative ``f'(x)`` written with ndgrad ops on the saved input: the VJP
is ``grad * f'(x)`` (conjugated for complex inputs) and the JVP ``tangent * f'(x)``, so double
backward and forward-over-reverse differentiate ``f'`` itself. Float16 and bfloat16 inputs are
computed in float32 and rounded back, as PyTorch's kernels do. The in-place forms
(``F.elu_``, ``inplace=True``) record the nodes PyTorch records for them (``EluBackward1`` ...)
through ``views_inplace.apply_inplace``. Functions PyTorch writes as compositions
(``softsign``, ``tanhshrink``, ``softmin``, ``gumbel_softmax``) are compositions here.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> x = ndgrad.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    >>> y = F.elu(x)
    >>> type(y.grad_fn).__name__
    'EluBackward0'
    >>> y.sum().backward(); [round(v, 4) for v in x.grad.tolist()]
    [0.3679, 1.0, 1.0]
"""

from __future__ import annotations

import math
import warnings
from importlib import import_module
from typing import Any, Callable, Optional

import numpy as np

from .. import _dtype
from .._generator import default_generator, draw, exponential_array, uniform_bits
from ..autograd.grad_mode import _state as _grad_state
from ..tensor import Tensor, _wrap
from . import _batching, _dispatch, _ties
from ._batching import call as _bcall
from ._dispatch import Op, apply
from ._jvp import not_implemented as _jvp_not_implemented
from ._second_order import tie, tied
from ._util import wrap_dim
from .pointwise import _zeros_of
from .pointwise import relu as _relu
from .pointwise import sigmoid as _sigmoid
from .pointwise import tanh as _tanh
from .pointwise import where as _where
from .shape import cat as _shape_cat
from .softmax import log_softmax as _log_softmax
from .softmax import softmax as _softmax
from .views_inplace import apply_inplace
from . import _autocast

_tensor_mod = import_module("ndgrad.tensor")  # the module (ndgrad.tensor is also a function)

__all__ = ["relu", "relu_", "relu6", "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu",
           "silu", "mish", "softplus", "softsign", "softmin", "softmax", "log_softmax",
           "gumbel_softmax", "hardtanh", "hardtanh_", "hardswish", "hardsigmoid", "hardshrink",
           "softshrink", "tanhshrink", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "rrelu_",
           "glu", "logsigmoid", "threshold", "threshold_", "sigmoid", "tanh"]

SIGNATURES = """
relu(Tensor input, bool inplace=False)
relu_(Tensor input)
relu6(Tensor input, bool inplace=False)
elu(Tensor input, float alpha=1.0, bool inplace=False)
elu_(Tensor input, float alpha=1.0)
selu(Tensor input, bool inplace=False)
selu_(Tensor input)
celu(Tensor input, float alpha=1.0, bool inplace=False)
celu_(Tensor input, float alpha=1.0)
gelu(Tensor input, *, str approximate="none")
silu(Tensor input, bool inplace=False)
mish(Tensor input, bool inplace=False)
softplus(Tensor input, float beta=1.0, float threshold=20.0)
softsign(Tensor input)
softmin(Tensor input, int? dim=None, int _stacklevel=3, ScalarType? dtype=None)
softmax(Tensor input, int? dim=None, int _stacklevel=3, ScalarType? dtype=None)
log_softmax(Tensor input, int? dim=None, int _stacklevel=3, ScalarType? dtype=None)
gumbel_softmax(Tensor logits, float tau=1, bool hard=False, float eps=1e-10, int dim=-1)
hardtanh(Tensor input, float min_val=-1.0, float max_val=1.0, bool inplace=False)
hardtanh_(Tensor input, float min_val=-1.0, float max_val=1.0)
hardswish(Tensor input, bool inplace=False)
hardsigmoid(Tensor input, bool inplace=False)
hardshrink(Tensor input, float lambd=0.5)
softshrink(Tensor input, float lambd=0.5)
tanhshrink(Tensor input)
leaky_relu(Tensor input, float negative_slope=0.01, bool inplace=False)
leaky_relu_(Tensor input, float negative_slope=0.01)
prelu(Tensor input, Tensor weight)
rrelu(Tensor input, float lower=0.125, float upper=0.3333333333333333, \
bool training=False, bool inplace=False)
rrelu_(Tensor input, float lower=0.125, float upper=0.3333333333333333, bool training=False)
glu(Tensor input, int dim=-1)
logsigmoid(Tensor input)
threshold(Tensor input, float threshold, float value, bool inplace=False)
threshold_(Tensor input, float threshold, float value)
sigmoid(Tensor input)
tanh(Tensor input)
"""

_LOWP = _dtype.HALF_NP
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


# ---------------------------------------------------------------------------- helpers
def _opmath(fwd: Callable) -> Callable:
    """A forward computed in float32 for float16/bfloat16 inputs, rounded back."""
    def run(x: np.ndarray, *args: Any) -> np.ndarray:
        if x.dtype in _LOWP:
            return np.asarray(fwd(x.astype(np.float32), *args)).astype(x.dtype)
        return np.asarray(fwd(x, *args)).astype(x.dtype, copy=False)
    run.__name__ = getattr(fwd, "__name__", "fwd")
    return run


def _const(v: Tensor, value: float) -> Tensor:
    return _wrap(np.asarray(value, dtype=v._data.dtype))


def _sel(mask: Tensor, a: Any, b: Any, v: Tensor) -> Tensor:
    """``where(mask, a, b)`` with Python scalars taken in ``v``'s dtype."""
    a = _const(v, a) if not isinstance(a, Tensor) else a
    b = _const(v, b) if not isinstance(b, Tensor) else b
    return _where(mask, a, b)


def _no_derivative(name: str) -> Callable:
    def vjp(ctx, *grads):
        raise RuntimeError(f"derivative for {name} is not implemented")
    return vjp


def _unary_op(name: str, node: str, fwd: Callable, deriv: Callable, args: tuple = (),
              lowp: bool = True, check: Optional[Callable] = None,
              deriv_np: Optional[Callable] = None, piecewise: bool = False,
              no_second: bool = False) -> Op:
    """An elementwise op with derivative ``deriv(x, *args)`` (Note [Activation ops]).
    ``check(ctx)`` runs before the VJP (the refusals of some in-place backward nodes).
    ``deriv_np(x, *args)``, the same derivative on ndarrays, serves a backward that records
    nothing (no ``create_graph``, no batched gradient): one fused NumPy expression instead of
    several ops. ``piecewise``: the derivative is piecewise constant, and the backward under
    ``create_graph`` is an op of (grad, self) (below). ``no_second``: that op has no derivative
    in PyTorch (``hardsigmoid_backward``): differentiating it raises PyTorch's errors."""
    f = _opmath(fwd) if lowp else fwd
    fast = _opmath(deriv_np) if deriv_np is not None else None

    def fast_vjp(g: np.ndarray, x: np.ndarray, args: tuple) -> np.ndarray:
        assert deriv_np is not None and fast is not None     # only called when given
        if lowp and x.dtype in _LOWP:
            # g * derivative in float32, rounded once: torch's float16/bfloat16 backward
            # kernels do not round the derivative before the product
            f32 = np.float32
            return (g.astype(f32) * deriv_np(x.astype(f32), *args)).astype(x.dtype)
        return g * fast(x, *args)

    def bwd_fwd(g: np.ndarray, x: np.ndarray, *a: Any) -> np.ndarray:
        if fast is not None:
            return fast_vjp(g, x, a)
        return (_wrap(g) * deriv(_wrap(x), *a))._data

    def bwd_vjp(ctx, gg):
        (x,) = ctx.saved
        return (gg * deriv(x, *ctx._args) if ctx.needs_input_grad(0) else None,
                _zeros_of(x) if ctx.needs_input_grad(1) else None)

    def bwd_jvp(ctx, tg, tx):
        return tg * deriv(ctx.inputs[1], *ctx._args) if tg is not None else \
            _zeros_of(ctx.result)
    # the backward as an op of (grad, self), for a piecewise-constant derivative under
    # create_graph (below)
    backward_op = None
    if no_second:
        aten = f"aten::{name}_backward"
        backward_op = Op(name + "_backward", "NotImplemented", bwd_fwd, _no_derivative(aten),
                         inputs=("grad_output", "self"), args=args,
                         jvp=_jvp_not_implemented(aten),
                         full_name="torch::autograd::NotImplemented")
        _batching.RULES[backward_op] = _batching._pointwise()
    elif piecewise:
        backward_op = Op(name + "_backward", node[:-1] + "Backward0", bwd_fwd, bwd_vjp,
                         saves=("self",), inputs=("grad_output", "self"), args=args,
                         jvp=bwd_jvp)
        _batching.RULES[backward_op] = _batching._pointwise()

    def vjp(ctx, g):
        if check is not None:
            check(ctx._args)
        x = ctx.saved[0]
        real = g._data.dtype == x._data.dtype and \
            (x._data.dtype.kind == "f" or x._data.dtype in _LOWP)
        # not under forward AD either: jacfwd(jacrev(f)) needs the tangent of this product
        if fast is not None and not _grad_state.enabled and not g._blevel \
                and not _dispatch._FW_AD and real:
            return _wrap(fast_vjp(g._data, x._data, ctx._args))
        d = deriv(x, *ctx._args)
        if backward_op is not None and real and (x.requires_grad and _grad_state.enabled
                                                 or no_second and _dispatch._FW_AD):
            # a piecewise-constant derivative (leaky_relu, hardtanh, threshold ...): torch's
            # backward is an op of (grad, self), so a double backward reaches the input with
            # zeros (LeakyReluBackwardBackward0) instead of leaving it out of the graph
            return apply(backward_op, (g, x), (g._data, x._data), ctx._args)
        return g * (d.conj() if d._data.dtype.kind == "c" else d)

    def jvp(ctx, t):
        return t * deriv(ctx.inputs[0], *ctx._args)
    op = Op(name, node, f, vjp, saves=("self",), args=args, jvp=jvp)
    _batching.RULES[op] = _batching._pointwise()
    return op


def _float_only(input: Tensor, kernel: str, complex_ok: bool = False) -> np.ndarray:
    x = input._data
    k = x.dtype.kind
    if k in "iub" or (k == "c" and not complex_ok):
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")
    return x


def _run(input: Tensor, fn: Callable[[Tensor], Tensor], inplace: bool) -> Tensor:
    return apply_inplace(input, fn) if inplace else fn(input)


def _unary(op: Op, input: Tensor, args: tuple) -> Tensor:
    return apply(op, (input,), (input._data,), args)


# ---------------------------------------------------------------------------- relu family
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)``; ``inplace=True`` modifies ``input``."""
    return _run(input, _relu, inplace)


def relu_(input: Tensor) -> Tensor:
    """In-place ``relu``."""
    return relu(input, True)


# float16/bfloat16: the forward clamps to the bounds rounded to the dtype through float32 (Note
# [Double to half]), the backward compares in float32 with the bounds in float32, as torch.
def _hardtanh_fwd(x: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    lo, hi = _dtype.number_in(lo, x.dtype), _dtype.number_in(hi, x.dtype)
    # hardtanh(-0.0, 0, 1) is -0.0: Note [Signed zeros in max and min]
    return _ties.minimum(_ties.maximum(x, np.asarray(lo, x.dtype)), np.asarray(hi, x.dtype))


def _hardtanh_deriv(v: Tensor, lo: Any, hi: Any) -> Tensor:
    # at a NaN input: 0, as PyTorch's vectorized kernel (its scalar tail, the last elements
    # that fill no vector, gives 1)
    w = v.float() if v._data.dtype in _LOWP else v
    return _sel((w > lo) & (w < hi), 1.0, 0.0, v)


HARDTANH = _unary_op("hardtanh", "HardtanhBackward0", _hardtanh_fwd, _hardtanh_deriv,
                     args=("min_val", "max_val"), lowp=False, piecewise=True)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``clamp(input, min_val, max_val)``, with zero gradient outside ``(min_val, max_val)``."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    x = input._data
    if x.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if x.dtype.kind == "b":
        raise RuntimeError("Bool inputs not supported for hardtanh")
    lo, hi = min_val, max_val
    if x.dtype.kind in "iu":
        lo, hi = int(lo), int(hi)
    else:
        _checked(x, lo, hi)
    return _run(input, lambda s: _unary(HARDTANH, s, (lo, hi)), inplace)


def _checked(x: np.ndarray, *numbers: Any) -> None:
    """PyTorch's overflow check of numbers its kernel converts to a floating dtype (65519 for
    float16: "value cannot be converted to type c10::Half without overflow")."""
    d = _dtype._FROM_NP[x.dtype]
    if d is not _dtype.bool:
        for v in numbers:
            if isinstance(v, (int, float)):
                _dtype.scalar_to(v, d)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place ``hardtanh``."""
    return hardtanh(input, min_val, max_val, True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(input, 0), 6)`` (PyTorch's ``hardtanh(input, 0, 6)``)."""
    return hardtanh(input, 0.0, 6.0, inplace)


# ---------------------------------------------------------------------------- ELU family
def _elu_fwd(x: np.ndarray, alpha: float, scale: float, input_scale: float) -> np.ndarray:
    # elu(-0.0) is -0.0: Note [Signed zeros in max and min]
    neg = scale * alpha * np.expm1(_ties.minimum(x, 0) * input_scale)
    return np.where(x > 0, x * scale, neg)


def _elu_deriv(v: Tensor, alpha: float, scale: float, input_scale: float) -> Tensor:
    neg = (v * input_scale).exp() * (scale * alpha * input_scale)
    return _sel(v > 0, scale, neg, v)   # NaN at a NaN input, as PyTorch's vectorized kernel


def _elu_inplace_check(args: tuple) -> None:
    if args[0] < 0:
        raise RuntimeError("In-place elu backward calculation is triggered with a negative "
                           "slope which is not supported. This is caused by calling in-place "
                           "forward function with a negative slope, please call out-of-place "
                           "version instead.")


def _elu_deriv_np(x: np.ndarray, alpha: float, scale: float,
                  input_scale: float) -> np.ndarray:
    neg = np.exp(np.minimum(x, 0) * input_scale) * (scale * alpha * input_scale)
    return np.where(x > 0, x.dtype.type(scale), neg)


_ELU_ARGS = ("alpha", "scale", "input_scale")
ELU = _unary_op("elu", "EluBackward0", _elu_fwd, _elu_deriv, _ELU_ARGS,
                deriv_np=_elu_deriv_np)
ELU_ = _unary_op("elu_", "EluBackward1", _elu_fwd, _elu_deriv, _ELU_ARGS,
                 check=_elu_inplace_check, deriv_np=_elu_deriv_np)
CELU = _unary_op("celu", "CeluBackward0", _elu_fwd, _elu_deriv, _ELU_ARGS,
                 deriv_np=_elu_deriv_np)
CELU_ = _unary_op("celu_", "CeluBackward1", _elu_fwd, _elu_deriv, _ELU_ARGS,
                  check=_elu_inplace_check, deriv_np=_elu_deriv_np)


def _elu_common(input: Tensor, args: tuple, inplace: bool, ops: tuple) -> Tensor:
    _float_only(input, "elu_cpu")
    op = ops[1] if inplace else ops[0]
    return _run(input, lambda s: _unary(op, s, args), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``input`` where positive, else ``alpha * (exp(input) - 1)``."""
    return _elu_common(input, (float(alpha), 1.0, 1.0), inplace, (ELU, ELU_))


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``elu``."""
    return elu(input, alpha, True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(input, alpha)`` with SELU's self-normalizing constants."""
    return _elu_common(input, (_SELU_ALPHA, _SELU_SCALE, 1.0), inplace, (ELU, ELU_))


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``."""
    return selu(input, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu_common(input, (float(alpha), 1.0, 1.0 / alpha), inplace, (CELU, CELU_))


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``."""
    return celu(input, alpha, True)


# ---------------------------------------------------------------------------- smooth ones
def _gelu_fwd(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(_GELU_K * (x + _GELU_C * x * x * x)))
    import scipy.special  # local import: SciPy loads on first use (import time)
    return 0.5 * x * (1 + scipy.special.erf(x * _SQRT_HALF))


def _gelu_deriv(v: Tensor, approximate: str) -> Tensor:
    if approximate == "tanh":
        t = (_GELU_K * (v + _GELU_C * v * v * v)).tanh()
        return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * (_GELU_K * (1 + 3 * _GELU_C * v * v))
    return 0.5 * (1 + (v * _SQRT_HALF).erf()) + v * (-0.5 * v * v).exp() * _INV_SQRT_2PI


def _gelu_deriv_np(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        t = np.tanh(_GELU_K * (x + _GELU_C * x * x * x))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * (_GELU_K * (1 + 3 * _GELU_C * x * x))
    import scipy.special  # local import: SciPy loads on first use (import time)
    return 0.5 * (1 + scipy.special.erf(x * _SQRT_HALF)) + x * np.exp(-0.5 * x * x) * \
        _INV_SQRT_2PI


GELU = _unary_op("gelu", "GeluBackward0", _gelu_fwd, _gelu_deriv, ("approximate",),
                 deriv_np=_gelu_deriv_np)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (``approximate="tanh"``: the tanh approximation)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_only(input, "GeluKernelImpl")
    return _unary(GELU, input, (approximate,))


def _sigmoid_np(x: np.ndarray) -> np.ndarray:
    # exp(-x) overflowing to inf gives the right limit 0 (np.logaddexp is ~20x slower)
    return 1 / (1 + np.exp(-x))


def _silu_deriv(v: Tensor) -> Tensor:
    s = _sigmoid(v)
    return s * (1 + v * (1 - s))


def _silu_deriv_np(x: np.ndarray) -> np.ndarray:
    sg = _sigmoid_np(x)
    return sg * (1 + x * (1 - sg))


SILU = _unary_op("silu", "SiluBackward0", lambda x: x * _sigmoid_np(x), _silu_deriv,
                 deriv_np=_silu_deriv_np)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * sigmoid(input)`` (complex inputs too)."""
    _float_only(input, "silu_cpu", complex_ok=True)
    return _run(input, lambda s: _unary(SILU, s, ()), inplace)


def _softplus_np(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))``, stable (np.logaddexp is ~20x slower)."""
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _mish_deriv(v: Tensor) -> Tensor:
    tsp = _unary(SOFTPLUS, v, (1.0, 20.0)).tanh()
    return tsp + v * _sigmoid(v) * (1 - tsp * tsp)


def _mish_deriv_np(x: np.ndarray) -> np.ndarray:
    tsp = np.tanh(_softplus_np(x))
    return tsp + x * _sigmoid_np(x) * (1 - tsp * tsp)


MISH = _unary_op("mish", "MishBackward0", lambda x: x * np.tanh(_softplus_np(x)), _mish_deriv,
                 deriv_np=_mish_deriv_np)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * tanh(softplus(input))``."""
    _float_only(input, "mish_cpu")
    return _run(input, lambda s: _unary(MISH, s, ()), inplace)


def _softplus_fwd(x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    z = x * beta
    return np.where(z > threshold, x, _softplus_np(z) / beta)


def _softplus_deriv(v: Tensor, beta: float, threshold: float) -> Tensor:
    z = v * beta
    return _sel(z > threshold, 1.0, _sigmoid(z), v)


def _softplus_deriv_np(x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    z = x * beta
    return np.where(z > threshold, x.dtype.type(1), _sigmoid_np(z))


SOFTPLUS = _unary_op("softplus", "SoftplusBackward0", _softplus_fwd, _softplus_deriv,
                     ("beta", "threshold"), deriv_np=_softplus_deriv_np)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` where ``beta * x > threshold``."""
    _float_only(input, "softplus_cpu")
    return _unary(SOFTPLUS, input, (beta, threshold))


def _logsigmoid_deriv(v: Tensor) -> Tensor:
    return _sigmoid(-v)


LOGSIGMOID = _unary_op("log_sigmoid", "LogSigmoidBackward0", lambda x: -_softplus_np(-x),
                       _logsigmoid_deriv, deriv_np=lambda x: _sigmoid_np(-x))


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(input))``, computed stably."""
    _float_only(input, "log_sigmoid_cpu")
    return _unary(LOGSIGMOID, input, ())


def softsign(input: Tensor) -> Tensor:
    """``input / (1 + |input|)``."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """``input - tanh(input)``."""
    return input - input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-input))``."""
    return _sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return _tanh(input)


# ---------------------------------------------------------------------------- hard ones
def _hardswish_deriv(v: Tensor) -> Tensor:
    return _sel(v < -3, 0.0, _sel(v <= 3, v / 3 + 0.5, 1.0, v), v)


HARDSWISH = _unary_op("hardswish", "HardswishBackward0",
                      lambda x: x * np.clip(x + 3, 0, 6) / 6, _hardswish_deriv,
                      deriv_np=lambda x: np.where(x < -3, 0, np.where(x <= 3, x / 3 + 0.5, 1)))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    _float_only(input, "hardswish_cpu")
    return _run(input, lambda s: _unary(HARDSWISH, s, ()), inplace)


# PyTorch's CPU kernel multiplies the gradient by 1/6 rounded to float32, at every dtype.
_ONE_SIXTH = float(np.float32(1.0) / np.float32(6.0))


def _hardsigmoid_deriv(v: Tensor) -> Tensor:
    return _sel((v > -3) & (v < 3), _ONE_SIXTH, 0.0, v)


HARDSIGMOID = _unary_op("hardsigmoid", "HardsigmoidBackward0",
                        lambda x: np.clip(x + 3, 0, 6) / 6, _hardsigmoid_deriv, no_second=True)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``."""
    _float_only(input, "hardsigmoid_cpu")
    return _run(input, lambda s: _unary(HARDSIGMOID, s, ()), inplace)


def _hardshrink_fwd(x: np.ndarray, lambd: float) -> np.ndarray:
    return np.where((x >= -lambd) & (x <= lambd), 0, x)


def _softshrink_fwd(x: np.ndarray, lambd: float) -> np.ndarray:
    # as PyTorch's kernel: 0 inside [-lambd, lambd], else shifted towards 0 (NaN stays NaN);
    # float16/bfloat16 in float32 with lambd in float32
    if x.dtype in _LOWP:
        return _softshrink_fwd(x.astype(np.float32), np.float32(lambd)).astype(x.dtype)
    # inside: +0.0 as torch's vectorized loop (its scalar tail, the last elements that fill no
    # vector, gives a zero of x's sign)
    return np.where((x >= -lambd) & (x <= lambd), 0, np.where(x > lambd, x - lambd, x + lambd))


def _shrink_deriv(v: Tensor, lambd: float) -> Tensor:
    # 0 at a NaN input, as PyTorch's vectorized kernel (its scalar tail gives 1)
    return _sel((v < -lambd) | (v > lambd), 1.0, 0.0, v)


HARDSHRINK = _unary_op("hardshrink", "HardshrinkBackward0", _hardshrink_fwd, _shrink_deriv,
                       ("lambd",), piecewise=True)
SOFTSHRINK = _unary_op("softshrink", "SoftshrinkBackward0", _softshrink_fwd, _shrink_deriv,
                       ("lambd",), piecewise=True)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` where ``|input| > lambd``, else 0."""
    x = _float_only(input, "hardshrink_cpu")
    _checked(x, lambd)
    return _unary(HARDSHRINK, input, (_dtype.number_in(lambd, x.dtype),))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input - lambd`` above ``lambd``, ``input + lambd`` below ``-lambd``, else 0."""
    x = _float_only(input, "softshrink_cpu")
    fmax = _dtype._FLOAT_MAX[_dtype._FROM_NP[x.dtype]]
    if not 0 <= lambd <= fmax:
        raise RuntimeError(f"lambda must be in range [0, {fmax:g}] for input dtype "
                           f"{_dtype._FROM_NP[x.dtype]._torch_name}, but found {lambd:g}")
    return _unary(SOFTSHRINK, input, (lambd,))


# ---------------------------------------------------------------------------- leaky ones
def _leaky_fwd(x: np.ndarray, slope: float) -> np.ndarray:
    return np.where(x > 0, x, x * slope)


def _leaky_deriv(v: Tensor, slope: float) -> Tensor:
    return _sel(v > 0, 1.0, slope, v)


def _leaky_inplace_check(args: tuple) -> None:
    if args[0] < 0:
        raise RuntimeError(
            "In-place leakyReLu backward calculation is triggered with a negative slope which is "
            "not supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead. File an issue at "
            "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
            "backward calculation with negative slope")


def _leaky_deriv_np(x: np.ndarray, slope: float) -> np.ndarray:
    t = x.dtype.type
    return np.where(x > 0, t(1), t(slope))


LEAKY_RELU = _unary_op("leaky_relu", "LeakyReluBackward0", _leaky_fwd, _leaky_deriv,
                       ("negative_slope",), deriv_np=_leaky_deriv_np, piecewise=True)
LEAKY_RELU_ = _unary_op("leaky_relu_", "LeakyReluBackward1", _leaky_fwd, _leaky_deriv,
                        ("negative_slope",), check=_leaky_inplace_check, piecewise=True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``input`` where positive, else ``negative_slope * input``."""
    _float_only(input, "leaky_relu_cpu")
    op = LEAKY_RELU_ if inplace else LEAKY_RELU
    return _run(input, lambda s: _unary(op, s, (negative_slope,)), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place ``leaky_relu``."""
    return leaky_relu(input, negative_slope, True)


# PyTorch's test is ``x <= threshold`` (replaced, zero gradient): a NaN input stays NaN and
# passes its gradient.
# float16/bfloat16 compare in float32 with the threshold in float32 (the value is rounded to the
# dtype through float32: Note [Double to half]).
def _threshold_fwd(x: np.ndarray, th: Any, value: Any) -> np.ndarray:
    if x.dtype in _LOWP and type(th) is float:
        th = np.float32(th)
    return np.where(x <= th, np.asarray(value).astype(x.dtype), x)


def _threshold_deriv(v: Tensor, th: Any, value: Any) -> Tensor:
    low = v._data.dtype in _LOWP and type(th) is float
    return _sel((v.float() if low else v) <= th, 0.0, 1.0, v)


THRESHOLD = _unary_op("threshold", "ThresholdBackward0", _threshold_fwd, _threshold_deriv,
                      ("threshold", "value"), lowp=False, piecewise=True)
THRESHOLD_ = _unary_op("threshold_", "ThresholdBackward1", _threshold_fwd, _threshold_deriv,
                       ("threshold", "value"), lowp=False, piecewise=True)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where ``input > threshold``, else ``value``."""
    x = input._data
    if x.dtype.kind in "cb":
        raise NotImplementedError("\"threshold_cpu\" not implemented for "
                                  f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")
    op = THRESHOLD_ if inplace else THRESHOLD
    _checked(x, value)
    value = _dtype.number_in(value, x.dtype)
    return _run(input, lambda s: _unary(op, s, (threshold, value)), inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place ``threshold``."""
    return globals()["threshold"](input, threshold, value, True)


# ---------------------------------------------------------------------------- rrelu
def _rrelu_fwd(x: np.ndarray, lower: float, upper: float, training: bool,
               noise: Optional[np.ndarray]) -> np.ndarray:
    if noise is not None:
        return x * noise.astype(x.dtype, copy=False)
    return np.where(x > 0, x, x * ((lower + upper) / 2))


def _rrelu_deriv(v: Tensor, lower: float, upper: float, training: bool,
                 noise: Optional[np.ndarray]) -> Tensor:
    if noise is not None:
        return _wrap(noise.astype(v._data.dtype, copy=False))
    return _sel(v > 0, 1.0, (lower + upper) / 2, v)


_RRELU_ARGS = ("lower", "upper", "training", "noise")
RRELU = _unary_op("rrelu_with_noise", "RreluWithNoiseBackward0", _rrelu_fwd, _rrelu_deriv,
                  _RRELU_ARGS)
RRELU_ = _unary_op("rrelu_with_noise_", "RreluWithNoiseBackward1", _rrelu_fwd, _rrelu_deriv,
                   _RRELU_ARGS)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: in training, negative inputs are scaled by slopes drawn
    uniformly from ``[lower, upper]`` (ndgrad's generator); otherwise by their mean."""
    running = _tensor_mod._vmap_running
    if running is not None and running():
        # torch.func has no batching rule for rrelu: refused in every randomness mode, in
        # training or not, batched input or not
        raise RuntimeError(f"vmap: we do not yet support aten::rrelu{'_' if inplace else ''}. "
                           "Please file an issue")
    if input._blevel:  # Note [Batched backward]
        r = _bcall(rrelu, input, lower, upper, training, inplace)
        if r is not NotImplemented:
            return r
    _float_only(input, "rrelu_with_noise_cpu")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    noise = None
    if training:
        noise = draw(_rrelu_noise, input, float(lower), float(upper))
    op = RRELU_ if inplace else RRELU
    return _run(input, lambda s: _unary(op, s, (lower, upper, training, noise)), inplace)


def _rrelu_noise(input: Tensor, lower: float, upper: float) -> np.ndarray:
    """rrelu's factors in training: slopes drawn from ``[lower, upper]`` where the input is
    not positive, else 1, in the input's dtype (the product's: the same results); through
    ``draw`` (Note [Draws in traced functions] in ndgrad/_generator.py).

    torch's numbers (Note [Random streams]): one float64 uniform (53 bits of a 64-bit draw)
    per element that is not positive, in row-major order, none for the others; the bounds are
    first rounded to the compute type (float32 below float64), the slope ``u * (upper -
    lower) + lower`` rounded to it too."""
    x = input._data
    neg = np.asarray(x <= 0)      # boolean indexing visits elements in row-major order
    n = int(np.count_nonzero(neg))
    acc = np.float64 if x.dtype == np.float64 else np.float32
    lo, hi = float(acc(lower)), float(acc(upper))
    u = uniform_bits(default_generator, n, np.float64)
    noise = np.ones(x.shape, acc)
    noise[neg] = (u * (hi - lo) + lo).astype(acc)
    # float16/bfloat16: the float32 slopes, so the forward rounds x * slope once (the
    # gradient uses them rounded to the input's dtype, as torch's saved noise)
    return noise if x.dtype in _LOWP else noise.astype(x.dtype, copy=False)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, True)


# ---------------------------------------------------------------------------- prelu
def _prelu_shape(x: np.ndarray, w: np.ndarray) -> tuple:
    """``w`` viewed to broadcast against ``x`` along the channel dim 1."""
    if w.size == 1 or x.ndim < 2:
        return (1,) * max(x.ndim, 0) if w.ndim else ()
    return (1, w.size) + (1,) * (x.ndim - 2)


def _prelu_fwd(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    wb = w.reshape(_prelu_shape(x, w)) if w.ndim else w
    return np.where(x > 0, x, x * wb).astype(x.dtype, copy=False)


def _prelu_wb(x: Tensor, w: Tensor) -> Tensor:
    return w.reshape(_prelu_shape(x._data, w._data)) if w._data.ndim else w


def _prelu_vjp(ctx, g):
    x, w = ctx.saved
    pos = x > 0
    wb = _prelu_wb(x, w)
    gx = tie(_where(pos, g, g * wb), ctx) if ctx.needs_input_grad(0) else None
    gw = None
    if ctx.needs_input_grad(1):
        contrib = _where(pos, _const(x, 0.0), g * x)
        if w._data.size == 1 or x._data.ndim < 2:
            gw = contrib.sum().reshape(w._data.shape)
        else:
            dims = [0] + list(range(2, x._data.ndim))
            gw = contrib.sum(dims).reshape(w._data.shape)
    return gx, gw


def _prelu_jvp(ctx, tx, tw):
    x, w = ctx.inputs
    pos = x > 0
    out = None
    if tx is not None:
        out = _where(pos, tx, tx * _prelu_wb(x, w))
    if tw is not None:
        r = _where(pos, _const(x, 0.0), x * _prelu_wb(x, tw))
        out = r if out is None else out + r
    return out


PRELU = Op("_prelu_kernel", "PreluKernelBackward0", _prelu_fwd, _prelu_vjp,
           saves=("self", "weight"), inputs=("self", "weight"), jvp=_prelu_jvp)


def _prelu_batch_rule(c: Any, args: tuple) -> Tensor:
    """PReLU on physical tensors with a leading batch dim: the weight viewed to broadcast
    along the logical channel dim, then ``where(x > 0, x, x * w)`` (recorded as those ops)."""
    x, w = c.ts
    lx, lw = c.ls
    n = len(lx)
    per_channel = int(np.prod(lw)) != 1 and n >= 2
    tail = (lw[0] if lw else 1,) + (1,) * (n - 2) if per_channel else (1,) * n
    wb = w.reshape(((c.B,) if c.bd[1] else ()) + tail)
    return _where(x > 0, x, x * wb)


_batching.RULES[PRELU] = _prelu_batch_rule
tied(PRELU)     # Note [Input ties]


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``input`` where positive, else ``weight * input``; ``weight`` has one element or one per
    channel (dim 1)."""
    if _autocast.active:  # Note [Autocast]
        input, weight = _autocast.lower(input, weight)
    if input._blevel or weight._blevel:  # Note [Batched backward]
        r = _bcall(prelu, input, weight)
        if r is not NotImplemented:
            return r
    x, w = input._data, weight._data
    _float_only(input, "prelu_cpu")
    if x.ndim == 0 and w.size != 1:
        raise RuntimeError("Not allow zero-dim input tensor.")
    if w.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {w.ndim}")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.size != 1 and w.size != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {w.size} and channel size = {channels}.")
    if w.dtype != x.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{_dtype._FROM_NP[x.dtype]._torch_name} and "
                           f"{_dtype._FROM_NP[w.dtype]._torch_name}")
    return apply(PRELU, (input, weight), (x, w))


# ---------------------------------------------------------------------------- glu
def _glu_fwd(x: np.ndarray, dim: int) -> np.ndarray:
    a, b = np.split(x, 2, axis=dim)
    if x.dtype in _LOWP:
        a, b = a.astype(np.float32), b.astype(np.float32)
    return (a * _sigmoid_np(b)).astype(x.dtype, copy=False)


def _glu_vjp(ctx, g):
    (x,) = ctx.saved
    dim = ctx._args[0]
    a, b = x.chunk(2, dim)
    s = _sigmoid(b)
    return _cat([g * s, g * a * s * (1 - s)], dim)


def _glu_jvp(ctx, t):
    x, dim = ctx.inputs[0], ctx._args[0]
    a, b = x.chunk(2, dim)
    ta, tb = t.chunk(2, dim)
    s = _sigmoid(b)
    return ta * s + a * s * (1 - s) * tb


def _cat(ts: list, dim: int) -> Tensor:
    return _shape_cat(ts, dim)


GLU = Op("glu", "GluBackward0", _glu_fwd, _glu_vjp, saves=("self",), args=("dim",),
         jvp=_glu_jvp)
_batching.RULES[GLU] = _batching._dim_first


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)`` for the two halves ``a``, ``b`` of ``input`` along ``dim``."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(glu, input, dim)
        if r is not NotImplemented:
            return r
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, x.ndim)
    _float_only(input, "glu_cpu")
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{x.shape[d]}")
    return apply(GLU, (input,), (x,), (d,))


# ---------------------------------------------------------------------------- softmax family
def _implicit_dim(name: str, ndim: int, stacklevel: int) -> int:
    # one frame more than PyTorch's stacklevel: the argument-checking wrapper of
    # ndgrad.nn.functional
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel + 1)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """``exp(x) / exp(x).sum(dim)``; without ``dim``, PyTorch's implicit choice (with its
    deprecation warning)."""
    if dim is None:
        dim = _implicit_dim("softmax", input.dim(), _stacklevel)
    return _softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    """``log(softmax(x, dim))``, computed stably."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.dim(), _stacklevel)
    return _log_softmax(input, dim, dtype)


def softmin(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """``softmax(-input, dim)``."""
    if dim is None:
        dim = _implicit_dim("softmin", input.dim(), _stacklevel)
    return _softmax(-input, dim, dtype)


def _gumbel_noise(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """``-log(e)`` of exponential(1) samples of ``dtype``: torch's ``-empty_like(logits)
    .exponential_().log()``, its numbers (Note [Random streams])."""
    return -np.log(exponential_array(shape, 1.0, None).astype(dtype))


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """Softmax of ``(logits + gumbel noise) / tau`` (noise from ndgrad's generator); with
    ``hard=True`` the one-hot of the argmax, with the soft sample's gradient."""
    x = logits._data
    gumbels = _wrap(draw(_gumbel_noise, x.shape, x.dtype if x.dtype.kind == "f" or
                         x.dtype in _LOWP else np.dtype(np.float32)))
    y_soft = _softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    d = wrap_dim(dim, max(x.ndim, 1))
    ys = y_soft._data
    idx = np.argmax(ys.reshape(1) if ys.ndim == 0 else ys, axis=d)
    onehot = np.zeros_like(ys.reshape(1) if ys.ndim == 0 else ys)
    np.put_along_axis(onehot, np.expand_dims(idx, d), 1.0, axis=d)
    y_hard = _wrap(onehot.reshape(ys.shape))
    return y_hard - y_soft.detach() + y_soft
