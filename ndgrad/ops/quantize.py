"""Fake quantization (quantization-aware training): ``fake_quantize_per_tensor_affine`` and
``fake_quantize_per_channel_affine``.

Note [Fake quantization]
The forward rounds ``input / scale`` half to even, adds the zero point, clamps to
``[quant_min, quant_max]`` and maps back: ``(q - zero_point) * scale``. The gradient is the
straight-through estimator: ``grad * mask``, the mask true where the unclamped ``q`` lay inside
the range, computed with the forward and saved as the node's ``mask`` (``grad_fn._saved_mask``,
as PyTorch's ``*CachemaskBackward0`` nodes), so the input may change in place before backward.
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
from ._dispatch import Op, apply
from ._util import wrap_dim
from .linalg_decomp import _no_forward_ad

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]


_LOWP = _dtype.HALF_NP
_F32 = np.dtype(np.float32)


def _vjp(ctx: Any, g: Tensor) -> Tensor:
    mask = ctx.saved[0]
    return g * mask.to(g.dtype)


def _forward(x: np.ndarray, *args: Any) -> np.ndarray:
    return args[-2]         # computed with the mask by the caller (Note [Fake quantization])


def _op(name: str, node: str) -> Op:
    # PyTorch has no forward-mode rule for these: its error (jvp) as there
    return Op(name, node, _forward, _vjp, saves=("mask",), args=("_values", "mask"),
              jvp=_no_forward_ad(name))


PER_TENSOR = _op("fake_quantize_per_tensor_affine_cachemask",
                 "FakeQuantizePerTensorAffineCachemaskBackward0")
PER_TENSOR_QPARAMS = _op("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
                         "FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0")
PER_CHANNEL = _op("fake_quantize_per_channel_affine_cachemask",
                  "FakeQuantizePerChannelAffineCachemaskBackward0")


def _kernel_dtype(x: np.ndarray, kernel: str) -> np.dtype:
    if x.dtype.kind != "f" and x.dtype not in _LOWP:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")
    return _F32 if x.dtype in _LOWP else x.dtype


def _check_range(quant_min: int, quant_max: int) -> None:
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def _zp_error() -> RuntimeError:
    return RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _run(op: Op, input: Tensor, out: np.ndarray, mask: np.ndarray) -> Tensor:
    out = out.astype(input._data.dtype, copy=False)
    return apply(op, (input,), (input._data,), (out, _wrap(mask)))


def _no_grad_qparams(fn: str, scale: Any, zero_point: Any) -> None:
    if not _grad_state.enabled:
        return
    for arg, t in (("scale", scale), ("zero_point", zero_point)):
        if isinstance(t, Tensor) and t.requires_grad:
            raise RuntimeError(f"The function '{fn}' is not differentiable with respect to "
                               f"argument '{arg}'. This input cannot have requires_grad True.")


def _item(t: Tensor, what: str) -> Any:
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
    if qparams:
        zp = int(_item(zero_point, "zero_point")) if isinstance(zero_point, Tensor) \
            else int(zero_point)
        sc = float(_item(scale, "scale")) if isinstance(scale, Tensor) else float(scale)
    else:
        zp, sc = int(zero_point), float(scale)
    if not qparams and not quant_min <= zp <= quant_max:
        raise _zp_error()
    x = input._data
    dt = _kernel_dtype(x, "fake_quantize_tensor_cachemask_kernel_type_handling")
    sc32 = np.float32(sc)
    with np.errstate(all="ignore"):
        inv = np.float32(1.0) / sc32
        v = np.rint(x.astype(dt, copy=False) * dt.type(inv))
        q = v + zp
        mask = (q >= quant_min) & (q <= quant_max)
        k = np.clip(q, quant_min, quant_max) - zp
        out = (k.astype(_F32) * sc32).astype(_F32, copy=False)
    op = PER_TENSOR_QPARAMS if qparams else PER_TENSOR
    return _run(op, input, out, mask)


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
    if scale._data.ndim != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point._data.ndim != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale._data.size != zero_point._data.size:
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    x = input._data
    ax = wrap_dim(axis, max(x.ndim, 1))
    if x.ndim == 0 or scale._data.size != x.shape[ax]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input "
                           "tensor")
    _check_range(quant_min, quant_max)
    float_zp = zd.kind == "f" or zname == "Half"
    if not float_zp and zero_point._data.size and (
            int(zero_point._data.min()) < quant_min or int(zero_point._data.max()) > quant_max):
        raise _zp_error()
    if not 0 <= axis <= x.ndim:
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    dt = _kernel_dtype(x, "fake_quantize_channel_cachemask_cpu_type_handling")
    shape = [1] * x.ndim
    shape[ax] = -1
    s32 = scale._data.astype(_F32).reshape(shape)
    s = s32.astype(dt)
    with np.errstate(all="ignore"):
        inv = (np.float32(1) / s32).astype(dt)
        xs = x.astype(dt, copy=False)
        if float_zp:
            z = zero_point._data.astype(dt).reshape(shape)
            q = np.rint(xs * inv + z)
        else:
            z = zero_point._data.astype(np.int64).reshape(shape)
            q = np.rint(xs * inv) + z
        mask = (q >= quant_min) & (q <= quant_max)
        out = (np.clip(q, quant_min, quant_max) - z).astype(dt) * s
    return _run(PER_CHANNEL, input, out, mask)
