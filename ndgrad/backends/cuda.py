"""``ndgrad.backends.cuda``: the CUDA switches training scripts set (nanoGPT's
``torch.backends.cuda.matmul.allow_tf32 = True``) and the scaled-dot-product-attention backend
flags, on ndgrad's CPU-only build as on torch's.

``matmul.allow_tf32`` is another view of :func:`ndgrad.set_float32_matmul_precision` ("highest"
means False); the reduced-precision reduction flags are recorded and change nothing. The
attention flags (``enable_flash_sdp`` ...) are the state ``ndgrad.nn.attention.sdpa_kernel``
sets: Note [Attention backend flags].

Example:
    >>> import ndgrad
    >>> ndgrad.backends.cuda.is_built(), ndgrad.backends.cuda.flash_sdp_enabled()
    (False, True)
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator

from .. import _settings

__all__ = ["is_built", "matmul", "flash_sdp_enabled", "enable_flash_sdp", "math_sdp_enabled",
           "enable_math_sdp", "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp",
           "cudnn_sdp_enabled", "enable_cudnn_sdp", "is_flash_attention_available", "sdp_kernel"]

# Note [Attention backend flags]: the attention backends scaled_dot_product_attention may use,
# as torch's SDPBackend values (0 math, 1 flash, 2 memory-efficient, 3 cuDNN, 4 overrideable).
# One global set, as torch's context flags: the enable_*_sdp functions here and
# ndgrad.nn.attention.sdpa_kernel write it, ndgrad/ops/nn_attention.py reads it per call.
MATH, FLASH, EFFICIENT, CUDNN = 0, 1, 2, 3
SDP_ENABLED = {"backends": frozenset({0, 1, 2, 3, 4})}


def is_built() -> bool:
    """False: ndgrad is not built with CUDA."""
    return False


def is_flash_attention_available() -> bool:
    """False: the CUDA flash-attention kernels are not built (the CPU one is a choice of
    ``sdpa_kernel``)."""
    return False


def _set_sdp(backend: int, enabled: Any, setter: str) -> None:
    if not isinstance(enabled, bool):
        # torch's message names the math setter for the first three (sic) and keeps a stray %s
        # for cuDNN
        raise RuntimeError(f"{setter} expects a bool, but got "
                           f"{'%s' if backend == CUDNN else ''}{type(enabled).__name__}")
    old = SDP_ENABLED["backends"]
    SDP_ENABLED["backends"] = old | {backend} if enabled else old - {backend}


def flash_sdp_enabled() -> bool:
    """Whether scaled_dot_product_attention may use the flash-attention backend."""
    return FLASH in SDP_ENABLED["backends"]


def enable_flash_sdp(enabled: bool) -> None:
    """Allow or forbid the flash-attention backend (the CPU kernel included)."""
    _set_sdp(FLASH, enabled, "set_sdp_use_math")


def math_sdp_enabled() -> bool:
    """Whether scaled_dot_product_attention may use the math backend."""
    return MATH in SDP_ENABLED["backends"]


def enable_math_sdp(enabled: bool) -> None:
    """Allow or forbid the math backend."""
    _set_sdp(MATH, enabled, "set_sdp_use_math")


def mem_efficient_sdp_enabled() -> bool:
    """Whether the (CUDA-only) memory-efficient backend is allowed."""
    return EFFICIENT in SDP_ENABLED["backends"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Allow or forbid the (CUDA-only) memory-efficient backend."""
    _set_sdp(EFFICIENT, enabled, "set_sdp_use_math")


def cudnn_sdp_enabled() -> bool:
    """Whether the (CUDA-only) cuDNN attention backend is allowed."""
    return CUDNN in SDP_ENABLED["backends"]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Allow or forbid the (CUDA-only) cuDNN attention backend."""
    _set_sdp(CUDNN, enabled, "set_sdp_use_cudnn")


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Iterator[dict]:
    """The deprecated spelling of ``ndgrad.nn.attention.sdpa_kernel``: within the block only the
    enabled backends may run; the previous flags come back after it."""
    warnings.warn("`ndgrad.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see `ndgrad.nn.attention."
                  "sdpa_kernel()` for the new context manager, with updated signature.",
                  FutureWarning, stacklevel=3)
    chosen = {FLASH: enable_flash, EFFICIENT: enable_mem_efficient, MATH: enable_math,
              CUDNN: enable_cudnn}
    saved = SDP_ENABLED["backends"]
    SDP_ENABLED["backends"] = frozenset(b for b, on in chosen.items() if on)
    try:
        yield {}
    finally:
        SDP_ENABLED["backends"] = saved


def _reduction_setting(value: Any, name: str) -> tuple:
    def as_bool(obj: Any, which: str) -> bool:
        if isinstance(obj, bool):
            return obj
        raise TypeError(f"{name} expects a bool for {which}, but got {type(obj)!r}")
    if isinstance(value, bool):
        return value, True
    if isinstance(value, (list, tuple)):
        if not value:
            raise TypeError(f"{name} expects at least one boolean argument")
        if len(value) > 2:
            raise TypeError(f"{name} expects at most two boolean arguments")
        reduced = as_bool(value[0], "allow_reduced_precision")
        split_k = as_bool(value[1], "allow_splitk") if len(value) == 2 else True
        if reduced and not split_k:
            raise RuntimeError("allow_splitk=False is not supported when reduced precision "
                               "reductions are enabled")
        return reduced, split_k
    raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got {type(value)!r}")


class cuBLASModule:
    """``ndgrad.backends.cuda.matmul``: the cuBLAS switches, as attributes; any other name is
    an AttributeError, as on torch."""

    _reductions = {"fp16": [True, True], "bf16": [True, True]}
    _fp16_accumulation = [False]

    def __getattr__(self, name: str) -> Any:
        if name == "allow_tf32":
            return _settings.get_float32_matmul_precision() != "highest"
        for kind, flags in self._reductions.items():
            if name == f"allow_{kind}_reduced_precision_reduction":
                return flags[0]
            if name == f"allow_{kind}_reduced_precision_reduction_split_k":
                return flags[1]
        if name == "allow_fp16_accumulation":
            return self._fp16_accumulation[0]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_tf32":
            if not isinstance(value, bool):
                raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got "
                                   f"{type(value).__name__}")
            _settings.set_float32_matmul_precision("high" if value else "highest")
            return
        for kind, flags in self._reductions.items():
            if name == f"allow_{kind}_reduced_precision_reduction":
                flags[:] = _reduction_setting(value, name)
                return
        if name == "allow_fp16_accumulation":
            if not isinstance(value, bool):
                raise RuntimeError(f"set_allow_fp16_accumulation_cublas expects a bool, but got "
                                   f"{type(value).__name__}")
            self._fp16_accumulation[0] = value
            return
        raise AttributeError("Unknown attribute " + name)


matmul = cuBLASModule()
