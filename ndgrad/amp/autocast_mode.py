"""The autocast context manager and its queries (Note [Autocast] in ndgrad/ops/_autocast.py).

Example:
    >>> import ndgrad
    >>> with ndgrad.autocast("cpu"):
    ...     ndgrad.is_autocast_enabled("cpu"), ndgrad.get_autocast_dtype("cpu")
    (True, ndgrad.bfloat16)
    >>> ndgrad.is_autocast_enabled("cpu")
    False
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Optional

from .. import _dtype
from ..ops import _autocast
from ..tensor import Tensor, device
from .grad_scaler import GradScaler as _Scaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled", "set_autocast_enabled", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache"]

_CPU_DTYPES = (_dtype.bfloat16, _dtype.float16)


def _device_type(device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    return device(device_type).type          # PyTorch's error for an unknown device string


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast accepts ``device_type`` (``"cpu"`` and ``"cuda"``, as PyTorch's CPU build
    answers; a ``"cuda"`` region disables itself with a warning)."""
    return _device_type(device_type) in ("cpu", "cuda")


def is_autocast_enabled(device_type: Optional[str] = None) -> bool:
    """Whether autocast is on in this thread for ``device_type`` (``"cuda"`` when omitted, as in
    PyTorch)."""
    return _autocast.state.enabled.get(_device_type(device_type or "cuda"), False)


def set_autocast_enabled(device_type: Any, enabled: Optional[bool] = None) -> None:
    """Turn autocast on or off for ``device_type`` in this thread (the context manager's
    primitive; ``set_autocast_enabled(flag)`` sets the CUDA state, as PyTorch's old form)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    dev = _device_type(device_type)
    st = _autocast.state
    was = st.enabled.get(dev, False)
    st.enabled[dev] = bool(enabled)
    if dev == "cpu" and was != bool(enabled):
        _autocast.count(1 if enabled else -1)


def get_autocast_dtype(device_type: str) -> _dtype.dtype:
    """The dtype autocast casts to on ``device_type`` in this thread (bfloat16 on the CPU and
    float16 on CUDA by default)."""
    return _autocast.state.dtype.get(_device_type(device_type), _dtype.float16)


def set_autocast_dtype(device_type: str, dtype: _dtype.dtype) -> None:
    """Set the dtype autocast casts to on ``device_type`` in this thread."""
    _autocast.state.dtype[_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether casts of leaves that require grad are cached within a region."""
    return _autocast.state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the cast cache on or off in this thread."""
    _autocast.state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop this thread's cached casts."""
    _autocast.clear_cache()


class autocast:
    """Run a region's eligible ops in lower precision: ``with autocast("cpu"): ...``, or as a
    decorator. ``dtype`` defaults to bfloat16 on the CPU; ``enabled=False`` makes it a no-op;
    ``cache_enabled`` (default on) caches the casts of leaves that require grad until the
    outermost region exits. A ``"cuda"`` region warns and disables itself (no CUDA here).

    >>> import ndgrad
    >>> w = ndgrad.ones(3, 3, requires_grad=True)
    >>> with ndgrad.autocast("cpu"):
    ...     y = ndgrad.ones(2, 3) @ w
    >>> y.dtype, y.grad_fn.name()
    (ndgrad.bfloat16, 'MmBackward0')
    >>> y.float().sum().backward(); w.grad.dtype
    ndgrad.float32
    """

    def __init__(self, device_type: str, dtype: Optional[_dtype.dtype] = None,
                 enabled: bool = True, cache_enabled: Optional[bool] = None) -> None:
        self.device = _device_type(device_type)
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else dtype
        self._cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                               else bool(cache_enabled))
        enabled = bool(enabled)
        if self.device == "cuda":
            if enabled:
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", stacklevel=2)
            enabled = False
        elif self.device == "cpu":
            if enabled and self.fast_dtype not in _CPU_DTYPES:
                warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                              "autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                              "torch.float16 currently.", stacklevel=2)
                enabled = False
        else:
            if enabled:
                warnings.warn(f"User specified an unsupported autocast device_type "
                              f"'{self.device}'", stacklevel=2)
            enabled = False
        self._enabled = enabled
        self._saved: list = []

    def __enter__(self) -> "autocast":
        st = _autocast.state
        dev = self.device
        self._saved.append((st.enabled.get(dev, False), st.dtype.get(dev), st.cache_enabled))
        st.depth += 1
        set_autocast_enabled(dev, self._enabled)
        st.dtype[dev] = self.fast_dtype
        st.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, *exc: Any) -> None:
        st = _autocast.state
        dev = self.device
        was_enabled, was_dtype, was_cache = self._saved.pop()
        st.depth -= 1
        if st.depth == 0:
            _autocast.clear_cache()
        set_autocast_enabled(dev, was_enabled)
        st.dtype[dev] = was_dtype
        st.cache_enabled = was_cache

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def decorated(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return decorated


def _cast_floats(value: Any, dtype: _dtype.dtype) -> Any:
    if isinstance(value, Tensor):
        if value.is_floating_point() and value.dtype != _dtype.float64:
            return value.to(dtype)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floats(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_floats(v, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd: Optional[Callable] = None, *, device_type: str,
               cast_inputs: Optional[_dtype.dtype] = None) -> Callable:
    """Decorator for a custom ``Function.forward``: with ``cast_inputs``, inside an enabled
    region the forward runs with autocast off on its floating inputs cast to ``cast_inputs``;
    without it, the forward runs under the caller's state. Either way the state is recorded for
    :func:`custom_bwd`."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast_floats(args, cast_inputs), **_cast_floats(kwargs, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd: Optional[Callable] = None, *, device_type: str) -> Callable:
    """Decorator for a custom ``Function.backward``: runs it under the autocast state its
    forward (decorated with :func:`custom_fwd`) ran with."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd


# PyTorch's deprecated per-device spellings (DeprecationWarning, as PyTorch 2.13).
def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated: ``is_autocast_enabled("cpu")``."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated: ``set_autocast_enabled("cpu", enabled)``."""
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> _dtype.dtype:
    """Deprecated: ``get_autocast_dtype("cpu")``."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: _dtype.dtype) -> None:
    """Deprecated: ``set_autocast_dtype("cpu", dtype)``."""
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> _dtype.dtype:
    """Deprecated: ``get_autocast_dtype("cuda")``."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def _device_spellings(device: str, default_dtype: _dtype.dtype) -> tuple:
    """``torch.<device>.amp``'s deprecated ``autocast`` and ``GradScaler`` classes: the
    generic ones for ``device`` with the deprecation warning PyTorch gives."""
    class autocast_(autocast):
        __doc__ = (f"``torch.{device}.amp.autocast(...)``: deprecated for "
                   f"``torch.amp.autocast({device!r}, ...)``.")

        def __init__(self, enabled: bool = True, dtype: _dtype.dtype = default_dtype,
                     cache_enabled: bool = True) -> None:
            warnings.warn(f"`torch.{device}.amp.autocast(args...)` is deprecated. Please use "
                          f"`torch.amp.autocast('{device}', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__(device, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    class GradScaler_(_Scaler):
        __doc__ = (f"``torch.{device}.amp.GradScaler(...)``: deprecated for "
                   f"``torch.amp.GradScaler({device!r}, ...)``.")

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`torch.amp.GradScaler('{device}', args...)` instead.",
                          FutureWarning, stacklevel=2)
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    module = f"ndgrad.{device}.amp"
    for cls, name in ((autocast_, "autocast"), (GradScaler_, "GradScaler")):
        cls.__name__ = cls.__qualname__ = name
        cls.__module__ = module
    return autocast_, GradScaler_
