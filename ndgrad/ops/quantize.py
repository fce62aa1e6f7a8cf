"""Fake quantization (quantization-aware training): ``fake_quantize_per_tensor_affine`` and
``fake_quantize_per_channel_affine``.

Note [Fake quantization]
The forward rounds ``input / scale`` half to even, adds the zero point, clamps to
``[quant_min, quant_max]`` and maps back: ``(q - zero_point) * scale``. The gradient is the
straight-through estimator: ``grad * mask``, the mask true where the unclamped ``q`` lay inside
the range. PyTorch's ``*CachemaskBackward0`` nodes save that mask; ndgrad's save the input
(``grad_fn._saved_self``) and recompute it, so the forward is a pure function of the input and
``vmap`` batches it (elementwise per tensor, entry by entry per channel); unlike torch, changing
the input in place before backward is then refused.
Scale and zero point get no gradient (refused when they require it, as PyTorch), and there is no
forward-mode rule (PyTorch's error). The arithmetic is that of PyTorch's CPU kernels, whose
results it matches bit for bit: ``x * (1 / scale)`` with the reciprocal taken in float32
(float16/bfloat16 inputs computed in float32); per tensor, ``(q - zero_point) * scale`` in
float32 and rounded to the input's dtype; per channel, in the input's dtype. A floating zero
point of the per-channel form is added before rounding (``round(x / scale + zero_point)``), not
rounded itself; the per-tensor form with tensor arguments truncates a floating zero point.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([-1.0, 0.04, 0.26, 2.0], requires_grad=True)
    >>> y = ndgrad.fake_quantize_per_tensor_affine(x, 0.1, 0, -5, 15)
    >>> [round(v, 2) for v in y.tolist()]
    [-0.5, 0.0, 0.3, 1.5]
    >>> y.sum().backward(); x.grad.tolist()
    [0.0, 1.0, 1.0, 0.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype
from ..autograd.grad_mode import _state as _grad_state
from ..tensor import Tensor, _wrap
from . import _batching
from ._dispatch import Op, apply
from ._util import wrap_dim
from .linalg_decomp import _no_forward_ad

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]


_LOWP = _dtype.HALF_NP
_F32 = np.dtype(np.float32)


def _work_dtype(x: np.ndarray) -> np.dtype:
    return _F32 if x.dtype in _LOWP else x.dtype


def _per_tensor_q(x: np.ndarray, scale: float, zp: int) -> np.ndarray:
    """The unclamped integers ``round(x / scale) + zero_point`` (Note [Fake quantization])."""
    dt = _work_dtype(x)
    inv = np.float32(1.0) / np.float32(scale)
    return np.rint(x.astype(dt, copy=False) * dt.type(inv)) + zp


def _per_tensor_fwd(x: np.ndarray, scale: float, zp: int, qmin: int, qmax: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        k = np.clip(_per_tensor_q(x, scale, zp), qmin, qmax) - zp
        return (k.astype(_F32) * np.float32(scale)).astype(x.dtype)


def _per_tensor_vjp(ctx: Any, g: Tensor) -> Tensor:
    # the mask with ndgrad ops, so a batched backward (vmap of grad) sees its batch dimension
    (x,) = ctx.saved
    scale, zp, qmin, qmax = ctx._args
    if x._data.dtype in _LOWP:
        x = x.float()
    q = (x * float(np.float32(1.0) / np.float32(scale))).round() + zp
    return g * ((q >= qmin) & (q <= qmax)).to(g.dtype)


def _channel_params(x: np.ndarray, scale: np.ndarray, zp: np.ndarray, axis: int) -> tuple:
    dt = _work_dtype(x)
    shape = [1] * x.ndim
    shape[axis] = -1
    s32 = scale.astype(_F32).reshape(shape)
    inv = (np.float32(1) / s32).astype(dt)
    floating = zp.dtype.kind == "f"
    z = zp.astype(dt if floating else np.int64).reshape(shape)
    xs = x.astype(dt, copy=False)
    q = np.rint(xs * inv + z) if floating else np.rint(xs * inv) + z
    return q, z, s32.astype(dt)


def _per_channel_fwd(x: np.ndarray, scale: np.ndarray, zp: np.ndarray, axis: int, qmin: int,
                     qmax: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        q, z, s = _channel_params(x, scale, zp, axis)
        return ((np.clip(q, qmin, qmax) - z).astype(s.dtype) * s).astype(x.dtype)


def _per_channel_vjp(ctx: Any, g: Tensor) -> Tensor:
    (x,) = ctx.saved
    scale, zp, axis, qmin, qmax = ctx._args
    with np.errstate(all="ignore"):
        q = _channel_params(x._data, scale, zp, axis)[0]
    return g * _wrap(((q >= qmin) & (q <= qmax)).astype(g._data.dtype))


# PyTorch has no forward-mode rule for these: its error (jvp) as there
PER_TENSOR = Op("fake_quantize_per_tensor_affine_cachemask",
                "FakeQuantizePerTensorAffineCachemaskBackward0", _per_tensor_fwd,
                _per_tensor_vjp, saves=("self",),
                args=("scale", "zero_point", "quant_min", "quant_max"),
                jvp=_no_forward_ad("fake_quantize_per_tensor_affine_cachemask"))
PER_TENSOR_QPARAMS = Op("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
                        "FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0",
                        _per_tensor_fwd, _per_tensor_vjp, saves=("self",),
                        args=("scale", "zero_point", "quant_min", "quant_max"),
                        jvp=_no_forward_ad(
                            "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams"))
PER_CHANNEL = Op("fake_quantize_per_channel_affine_cachemask",
                 "FakeQuantizePerChannelAffineCachemaskBackward0", _per_channel_fwd,
                 _per_channel_vjp, saves=("self",),
                 args=("scale", "zero_point", "axis", "quant_min", "quant_max"),
                 jvp=_no_forward_ad("fake_quantize_per_channel_affine_cachemask"))
for _op in (PER_TENSOR, PER_TENSOR_QPARAMS):       # elementwise; per channel: entry by entry
    _batching.RULES[_op] = _batching._pointwise()


def _check_float(x: Tensor, kernel: str) -> None:
    d = x._data.dtype
    if d.kind != "f" and d not in _LOWP:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_dtype._FROM_NP[d]._torch_name}'")


def _check_range(quant_min: int, quant_max: int) -> None:
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def _zp_error() -> RuntimeError:
    return RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _no_grad_qparams(fn: str, scale: Any, zero_point: Any) -> None:
    if not _grad_state.enabled:
        return
    for arg, t in (("scale", scale), ("zero_point", zero_point)):
        if isinstance(t, Tensor) and t.requires_grad:
            raise RuntimeError(f"The function '{fn}' is not differentiable with respect to "
                               f"argument '{arg}'. This input cannot have requires_grad True.")


def _item(t: Tensor) -> Any:
    if t._data.size != 1:
        raise RuntimeError(f"a Tensor with {t._data.size} elements cannot be converted to "
                           "Scalar")
    return t._data.reshape(-1)[0]


def fake_quantize_per_tensor_affine(input: Tensor, scale: Any, zero_point: Any, quant_min: int,
                                    quant_max: int) -> Tensor:
    """``input`` rounded to the grid ``scale * (q - zero_point)``, ``q`` an integer in
    ``[quant_min, quant_max]``; the gradient passes where ``q`` was not clamped (Note [Fake
    quantization]).

    Example:
        >>> import ndgrad
        >>> ndgrad.fake_quantize_per_tensor_affine(ndgrad.tensor([0.14, 0.25, 9.0]), 0.1, 0,
        ...                                        0, 15).tolist()
        [0.10000000149011612, 0.20000000298023224, 1.5]
    """
    qparams = isinstance(scale, Tensor) or isinstance(zero_point, Tensor)
    _no_grad_qparams(PER_TENSOR_QPARAMS.name, scale, zero_point)
    _check_range(quant_min, quant_max)
    zp = int(_item(zero_point)) if isinstance(zero_point, Tensor) else int(zero_point)
    sc = float(_item(scale)) if isinstance(scale, Tensor) else float(scale)
    if not qparams and not quant_min <= zp <= quant_max:
        raise _zp_error()
    _check_float(input, "fake_quantize_tensor_cachemask_kernel_type_handling")
    op = PER_TENSOR_QPARAMS if qparams else PER_TENSOR
    args = (sc, zp, int(quant_min), int(quant_max))
    return apply(op, (input,), (input._data,), args)


def fake_quantize_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor,
                                     axis: int, quant_min: int, quant_max: int) -> Tensor:
    """Per-channel fake quantization along ``axis``: channel ``c`` uses ``scale[c]`` and
    ``zero_point[c]`` (Note [Fake quantization]).

    Example:
        >>> import ndgrad
        >>> w = ndgrad.tensor([[0.14, -0.31], [0.14, -0.31]])
        >>> s, z = ndgrad.tensor([0.1, 0.2]), ndgrad.tensor([0, 0], dtype=ndgrad.int32)
        >>> ndgrad.fake_quantize_per_channel_affine(w, s, z, 0, -8, 7).tolist()
        [[0.10000000149011612, -0.30000001192092896], [0.20000000298023224, -0.4000000059604645]]
    """
    _no_grad_qparams(PER_CHANNEL.name, scale, zero_point)
    sd, zd = scale._data.dtype, zero_point._data.dtype
    sname, zname = _dtype._FROM_NP[sd]._torch_name, _dtype._FROM_NP[zd]._torch_name
    if sd != _F32 and sname != "BFloat16":
        raise RuntimeError(f"Scale must be Float or BFloat16, found {sname}")
    if zname not in ("Int", "Float", "Half"):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found {zname}")
    if scale.dim() != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.dim() != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    s_np, z_np = scale._data, zero_point._data
    if s_np.size != z_np.size:
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    ndim = input.dim()
    ax = wrap_dim(axis, max(ndim, 1))
    if ndim == 0 or s_np.size != input.shape[ax]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input "
                           "tensor")
    _check_range(quant_min, quant_max)
    floating = zd.kind == "f" or zname == "Half"
    if not floating and z_np.size and (int(z_np.min()) < quant_min or
                                       int(z_np.max()) > quant_max):
        raise _zp_error()
    if not 0 <= axis <= ndim:
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    _check_float(input, "fake_quantize_channel_cachemask_cpu_type_handling")
    z_np = z_np.astype(np.float32) if floating else z_np
    args = (s_np, z_np, ax, int(quant_min), int(quant_max))
    return apply(PER_CHANNEL, (input,), (input._data,), args)
