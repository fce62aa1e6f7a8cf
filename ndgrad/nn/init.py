"""``ndgrad.nn.init``: fill a tensor in place with values from a distribution, as
``torch.nn.init`` (same distributions, bounds, gains and errors), drawing from ndgrad's global
generator (``ndgrad.manual_seed``) or from ``generator=`` (an ``ndgrad.Generator``), the way
PyTorch draws (Note [Random streams] in ``ndgrad/_generator.py``): the same seed gives torch's
weights. Every function works under ``no_grad`` and returns its tensor.

    >>> import ndgrad
    >>> from ndgrad.nn import init
    >>> w = ndgrad.empty(3, 5)
    >>> _ = init.kaiming_uniform_(w, a=5 ** 0.5)
    >>> bool(w.abs().max() <= 1 / 5 ** 0.5)
    True
    >>> init.calculate_gain("leaky_relu", 0.2)
    1.3867504905630728
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import numpy as np

from .. import _dtype
from .._generator import Generator, normal_array, randperm_array, uniform_array
from ..autograd import grad_mode
from ..tensor import Tensor, _wrap

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant",
           "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal",
           "sparse"]


def _gen(generator: Any) -> Optional[Generator]:
    """An ``ndgrad.Generator`` (or None: the default one) for the torch-exact samplers."""
    if generator is None or isinstance(generator, Generator):
        return generator
    raise TypeError(f"generator must be an ndgrad.Generator, got {type(generator).__name__}")


def _store(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Write ``values`` into ``tensor`` in place (no history, version bumped)."""
    with grad_mode.no_grad():
        tensor.copy_(_wrap(np.asarray(values)))
    return tensor


def _check_tensor(tensor: Any, fn: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fn}(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")


def _check_float(tensor: Tensor, kernel: str) -> None:
    d = _dtype._FROM_NP[tensor._data.dtype]
    if d._category < _dtype._FLOAT:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{d._torch_name}'")


def calculate_gain(nonlinearity: str, param: Any = None) -> float:
    """The recommended gain for ``nonlinearity`` (``'leaky_relu'`` takes its negative slope as
    ``param``)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Optional[Any] = None) -> Tensor:
    """Fill with samples of U(a, b)."""
    _check_tensor(tensor, "uniform_")
    _check_float(tensor, "check_uniform_bounds")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} "
                           f"> to={b}")
    if tensor.is_meta:          # nothing to fill: a no-op, as torch's
        return tensor
    # torch's numbers for the seed (Note [Random streams] in ndgrad/_generator.py)
    vals = uniform_array(tuple(tensor.shape), a, b, tensor._data.dtype, _gen(generator))
    return _store(tensor, vals)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Optional[Any] = None) -> Tensor:
    """Fill with samples of N(mean, std^2)."""
    _check_tensor(tensor, "normal_")
    _check_float(tensor, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if tensor.is_meta:
        return tensor
    return _store(tensor, normal_array(tuple(tensor.shape), mean, std, tensor._data.dtype,
                                       _gen(generator)))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Optional[Any] = None) -> Tensor:
    """Fill with samples of N(mean, std^2) truncated to [a, b], drawn by rejection as PyTorch
    draws them (so the same seed gives torch's numbers): normal samples redrawn where out of
    bounds when the interval holds more than 30% of the mass, else uniform candidates on
    [a, b] accepted with probability pdf / pdf(mode)."""
    _check_tensor(tensor, "trunc_normal_")
    _check_float(tensor, "normal_kernel_cpu")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)

    if tensor.is_meta:
        return tensor

    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    g = _gen(generator)
    shape, dt = tuple(tensor.shape), tensor._data.dtype
    p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
    with np.errstate(all="ignore"):
        if p > 0.3:
            lo, hi = dt.type(a), dt.type(b)      # the bounds in the tensor's type
            result = normal_array(shape, mean, std, dt, g)
            while True:
                mask = (result < lo) | (result > hi)
                if not mask.any():
                    break
                result = np.where(mask, normal_array(shape, mean, std, dt, g), result)
        else:
            mode = max(a, min(mean, b))
            log_peak = -0.5 * ((mode - mean) / std) ** 2

            def log_pdf(c: np.ndarray) -> np.ndarray:
                return ((((c - dt.type(mean)) / dt.type(std)) ** 2) * dt.type(-0.5)
                        - dt.type(log_peak)).astype(dt)

            result = uniform_array(shape, a, b, dt, g)
            pending = np.log(uniform_array(shape, 0.0, 1.0, dt, g)) > log_pdf(result)
            while pending.any():
                cand = uniform_array(shape, a, b, dt, g)
                result = np.where(pending, cand, result)
                pending = np.where(
                    pending, np.log(uniform_array(shape, 0.0, 1.0, dt, g)) > log_pdf(cand),
                    pending)
    return _store(tensor, result)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    _check_tensor(tensor, "constant_")
    with grad_mode.no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    _check_tensor(tensor, "zeros_")
    with grad_mode.no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d tensor with the identity matrix."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _store(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-d (convolution weight) tensor with the Dirac delta, keeping the
    identity of the input channels in each group."""
    dimensions = tensor.ndimension()
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    vals = np.zeros(sizes)
    center = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min_dim):
            vals[(g * out_per_group + d, d) + center] = 1
    return _store(tensor, vals)


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple:
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    if dimensions > 2:
        for s in tensor.shape[2:]:
            receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Optional[Any] = None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Optional[Any] = None) -> Tensor:
    """Glorot normal: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Optional[Any] = None) -> Tensor:
    """He uniform: U(-bound, bound) with ``bound = gain * sqrt(3 / fan)``."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Optional[Any] = None) -> Tensor:
    """He normal: N(0, std^2) with ``std = gain / sqrt(fan)``."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Optional[Any] = None) -> Tensor:
    """A (semi-)orthogonal matrix (the trailing dims flattened), scaled by ``gain``: the Q of
    the QR decomposition of a standard normal matrix, its columns' signs fixed by R's
    diagonal."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    _check_float(tensor, "normal_kernel_cpu")
    if tensor.is_meta:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flat = normal_array((rows, cols), 0.0, 1.0, tensor._data.dtype, _gen(generator))
    if flat.dtype.kind == "V" or flat.dtype.itemsize < 4:     # LAPACK has no half types
        flat = flat.astype(np.float32)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    _store(tensor, q.reshape(tuple(tensor.shape)))
    with grad_mode.no_grad():
        tensor.mul_(gain)
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01,
            generator: Optional[Any] = None) -> Tensor:
    """A 2-d tensor with N(0, std^2) values and, in each column, ``ceil(sparsity * rows)``
    zeros at random rows."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    _check_float(tensor, "normal_kernel_cpu")
    rows, cols = tuple(tensor.shape)
    num_zeros = int(math.ceil(sparsity * rows))
    if tensor.is_meta:
        return tensor
    vals = normal_array((rows, cols), 0.0, std, tensor._data.dtype, _gen(generator))
    for col in range(cols):     # PyTorch draws the permutations from the default generator
        vals[randperm_array(rows, None)[:num_zeros], col] = 0
    return _store(tensor, vals)


def _deprecated(meth: Any) -> Any:
    old_name = meth.__name__[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{meth.__name__}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"Deprecated alias of ``{meth.__name__}``."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
eye = _deprecated(eye_)          # compat (session 22)
dirac = _deprecated(dirac_)
