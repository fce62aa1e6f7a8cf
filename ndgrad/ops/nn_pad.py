"""nn op family: ``pad`` (constant, reflect, replicate, circular), ``pixel_shuffle``,
``pixel_unshuffle`` and ``channel_shuffle``.

Constant padding is one op whose backward is constant padding by the negated amounts (a crop).
The other modes are gathers along the last dims with precomputed index vectors (a reflected,
clamped or wrapped ``arange``); their backward sums the gradient back through the same
indices (one matrix product with a 0/1 matrix per padded dim), and that op's backward is the
gather again, so gradients of any order stay within these two ops.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.pad(ndgrad.tensor([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect").tolist()
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..tensor import Tensor
from . import _batching
from ._dispatch import Op, apply

__all__ = ["pad", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
           "native_channel_shuffle"]

SIGNATURES = """
pad(Tensor input, Any pad, str mode="constant", float? value=None)
pixel_shuffle(Tensor input, int upscale_factor)
pixel_unshuffle(Tensor input, int downscale_factor)
channel_shuffle(Tensor input, int groups)
native_channel_shuffle(Tensor input, int groups)
"""


# ---------------------------------------------------------------------------- constant
def _constant_pad_fwd(x: np.ndarray, pad: tuple, value: Any) -> np.ndarray:
    k = len(pad) // 2
    nd = x.ndim
    crop = [slice(None)] * nd
    widths = [(0, 0)] * nd
    for i in range(k):
        d = nd - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        crop[d] = slice(max(-lo, 0), x.shape[d] - max(-hi, 0))
        widths[d] = (max(lo, 0), max(hi, 0))
    y = x[tuple(crop)]
    if not any(w != (0, 0) for w in widths):
        return y.copy()
    return np.pad(y, widths, mode="constant", constant_values=value)


def _neg(pad: tuple) -> tuple:
    return tuple(-p for p in pad)


def _constant_pad(x: Tensor, pad: tuple, value: Any) -> Tensor:
    return apply(CONSTANT_PAD, (x,), (x._data,), (pad, value))


CONSTANT_PAD = Op("constant_pad_nd", "ConstantPadNdBackward0", _constant_pad_fwd,
                  lambda ctx, g: _constant_pad(g, _neg(ctx._args[0]), 0),
                  args=("pad", "value"),
                  jvp=lambda ctx, t: _constant_pad(t, ctx._args[0], 0))


# ---------------------------------------------------------------------------- gathers
def _gather_fwd(x: np.ndarray, pad: tuple, idxs: tuple, sizes: tuple) -> np.ndarray:
    k = len(idxs)
    for i, idx in enumerate(idxs):
        x = np.take(x, idx, axis=x.ndim - k + i)
    return x


def _scatter_fwd(g: np.ndarray, pad: tuple, idxs: tuple, sizes: tuple) -> np.ndarray:
    """Sum ``g`` back through the gather: per dim, a product with a 0/1 matrix."""
    k = len(idxs)
    for i, (idx, n) in enumerate(zip(idxs, sizes)):
        ax = g.ndim - k + i
        onehot = np.zeros((idx.size, n), dtype=g.dtype)
        onehot[np.arange(idx.size), idx] = 1
        g = np.moveaxis(np.tensordot(np.moveaxis(g, ax, -1), onehot, axes=1), -1, ax)
    return np.ascontiguousarray(g)


def _gather(x: Tensor, op: Op, args: tuple) -> Tensor:
    return apply(op, (x,), (x._data,), args)


_GATHERS: dict = {}


def _gather_ops(node: str) -> tuple:
    """The (gather, scatter) pair of one padding mode and rank, ``node`` its backward name."""
    if node not in _GATHERS:
        holder: dict = {}
        fwd = Op(f"pad_{node}", node, _gather_fwd,
                 lambda ctx, g: _gather(g, holder["bwd"], ctx._args),
                 args=("padding", "indices", "sizes"),
                 jvp=lambda ctx, t: _gather(t, holder["fwd"], ctx._args))
        bwd = Op(f"pad_{node}_backward", node.replace("Backward0", "BackwardBackward0"),
                 _scatter_fwd, lambda ctx, g: _gather(g, holder["fwd"], ctx._args),
                 args=("padding", "indices", "sizes"),
                 jvp=lambda ctx, t: _gather(t, holder["bwd"], ctx._args))
        holder["fwd"], holder["bwd"] = fwd, bwd
        # Both act on the last dims only: a leading batch dim passes through.
        _batching.RULES[fwd] = _batching.RULES[bwd] = _batch_passthrough
        _GATHERS[node] = (fwd, bwd)
    return _GATHERS[node]


def _batch_passthrough(c: Any, args: tuple) -> Tensor:
    return apply(c.op, tuple(c.ts), tuple(c.arrs), args)


def _reflect_index(n: int, lo: int, hi: int) -> np.ndarray:
    j = np.arange(-lo, n + hi)
    j = np.abs(j)
    return np.where(j > n - 1, 2 * (n - 1) - j, j)


def _replicate_index(n: int, lo: int, hi: int) -> np.ndarray:
    return np.clip(np.arange(-lo, n + hi), 0, n - 1)


def _circular_index(n: int, lo: int, hi: int) -> np.ndarray:
    base = np.arange(max(-lo, 0), n - max(-hi, 0))
    m = base.size
    return base[np.arange(-max(lo, 0), m + max(hi, 0)) % m]


_NON_CONSTANT_MSG = (
    "Padding size {p} is not supported for {d}D input tensor.\nSupported combinations for "
    "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _check_non_constant(x: np.ndarray, pad: tuple, mode: str) -> None:
    k = len(pad) // 2
    nd = x.ndim
    if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
        raise NotImplementedError(_NON_CONSTANT_MSG.format(p=len(pad), d=nd))
    shape = list(x.shape)
    if mode != "circular":
        first = 1 if nd == k + 2 else 0
        if any(s == 0 for s in shape[first:]):
            raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly "
                               f"0 batch size and other non-zero dimensions for input, but got: "
                               f"{shape}")
    for i in range(k):
        d = nd - 1 - i
        n, lo, hi = shape[d], pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the "
                               "corresponding input dimension, but got: padding "
                               f"({lo}, {hi}) at dimension {d} of input {shape}")
        if mode == "circular":
            if lo > n or hi > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if n + min(lo, 0) + min(hi, 0) < 0 or (n + min(lo, 0) + min(hi, 0) == 0
                                                    and (lo > 0 or hi > 0)):
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        elif k == 1 and n + lo + hi < 1:
            raise RuntimeError(f"input (W: {n}) is too small. Calculated output W: {n + lo + hi}")
    if mode != "circular" and k > 1:
        out = shape[:nd - k] + [shape[nd - k + j] + pad[2 * (k - 1 - j)] + pad[2 * (k - 1 - j) + 1]
                                for j in range(k)]
        bad = [v for v in out if v < 0]
        if bad:
            # PyTorch lets 2-d and 3-d reflection/replication crop to an empty dim
            raise RuntimeError(f"Trying to create tensor with negative dimension {bad[0]}: "
                               f"{out}")


_INDEX = {"reflect": (_reflect_index, "ReflectionPad{}DBackward0"),
          "replicate": (_replicate_index, "ReplicationPad{}DBackward0"),
          "circular": (_circular_index, "CopySlices")}


def pad(input: Tensor, pad: Any, mode: str = "constant", value: Optional[float] = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims of ``input``: ``pad = (left_last, right_last,
    left_second_last, ...)``; negative amounts crop. ``mode``: ``"constant"`` (with ``value``,
    default 0), ``"reflect"``, ``"replicate"`` or ``"circular"``.

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.pad(ndgrad.tensor([1.0, 2.0]), (1, 2), value=9.0).tolist()
    [9.0, 1.0, 2.0, 9.0, 9.0]
    """
    if input._blevel:  # Note [Batched backward]
        r = _batching.call(pad_fn, input, pad, mode, value)
        if r is not NotImplemented:
            return r
    return pad_fn(input, pad, mode, value)


def _pad_tuple(p: Any) -> tuple:
    if isinstance(p, Tensor) or not isinstance(p, (tuple, list)) and not hasattr(p, "__len__"):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not "
                        f"{type(p).__name__}")
    out = []
    for i, v in enumerate(p):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {type(v).__name__} at pos {i}")
        out.append(int(v))
    return tuple(out)


def pad_fn(input: Tensor, pad: Any, mode: str = "constant",
           value: Optional[float] = None) -> Tensor:
    """``pad`` without the batching entry (see ``pad``)."""
    p = _pad_tuple(pad)
    x = input._data
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(p) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(p) // 2 > x.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(p)} and input of dimension "
                           f"{x.ndim}")
    if mode == "constant":
        k = len(p) // 2
        for i in range(k):
            # torch first crops the negative pads off (a narrow per side): each crop must leave
            # a non-negative size, even when the other side's padding would make up for it
            n = x.shape[x.ndim - 1 - i]
            for side in p[2 * i:2 * i + 2]:
                if side < 0:
                    n += side
                    if n < 0:
                        raise RuntimeError("narrow(): length must be non-negative.")
        v = 0 if value is None else value
        if x.dtype.kind in "iub" and isinstance(v, float) and x.dtype.kind != "b":
            v = int(v)
        return _constant_pad(input, p, np.asarray(v).astype(x.dtype)[()])
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    _check_non_constant(x, p, mode)
    k = len(p) // 2
    index, node = _INDEX[mode]
    fwd, _ = _gather_ops(node.format(k))
    idxs, sizes = [], []
    for j in range(k):             # dims in order, from the first padded one
        i = k - 1 - j
        d = x.ndim - k + j
        idxs.append(index(x.shape[d], p[2 * i], p[2 * i + 1]))
        sizes.append(x.shape[d])
    return _gather(input, fwd, (p, tuple(idxs), tuple(sizes)))


# ---------------------------------------------------------------------------- shuffles
def _pixel_shuffle_fwd(x: np.ndarray, r: int) -> np.ndarray:
    *lead, c, h, w = x.shape
    oc = c // (r * r)
    y = x.reshape(*lead, oc, r, r, h, w)
    n = len(lead)
    y = y.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return np.ascontiguousarray(y).reshape(*lead, oc, h * r, w * r)


def _pixel_unshuffle_fwd(x: np.ndarray, r: int) -> np.ndarray:
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    y = y.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return np.ascontiguousarray(y).reshape(*lead, c * r * r, h // r, w // r)


def _channel_shuffle_fwd(x: np.ndarray, groups: int) -> np.ndarray:
    n, c = x.shape[:2]
    y = x.reshape(n, groups, c // groups, *x.shape[2:]).swapaxes(1, 2)
    return np.ascontiguousarray(y).reshape(x.shape)


def _channel_unshuffle_fwd(x: np.ndarray, groups: int) -> np.ndarray:
    return _channel_shuffle_fwd(x, x.shape[1] // groups) if x.shape[1] else x.copy()


PIXEL_SHUFFLE: Op = Op("pixel_shuffle", "PixelShuffleBackward0", _pixel_shuffle_fwd,
                   lambda ctx, g: apply(PIXEL_UNSHUFFLE, (g,), (g._data,), ctx._args),
                   args=("upscale_factor",),
                   jvp=lambda ctx, t: apply(PIXEL_SHUFFLE, (t,), (t._data,), ctx._args))
PIXEL_UNSHUFFLE: Op = Op("pixel_unshuffle", "PixelUnshuffleBackward0", _pixel_unshuffle_fwd,
                     lambda ctx, g: apply(PIXEL_SHUFFLE, (g,), (g._data,), ctx._args),
                     args=("downscale_factor",),
                     jvp=lambda ctx, t: apply(PIXEL_UNSHUFFLE, (t,), (t._data,), ctx._args))
CHANNEL_SHUFFLE: Op = Op("channel_shuffle", "ChannelShuffleBackward0", _channel_shuffle_fwd,
                     lambda ctx, g: apply(CHANNEL_UNSHUFFLE, (g,), (g._data,), ctx._args),
                     args=("groups",),
                     jvp=lambda ctx, t: apply(CHANNEL_SHUFFLE, (t,), (t._data,), ctx._args))
CHANNEL_UNSHUFFLE: Op = Op("channel_unshuffle", "ChannelShuffleBackwardBackward0",
                       _channel_unshuffle_fwd,
                       lambda ctx, g: apply(CHANNEL_SHUFFLE, (g,), (g._data,), ctx._args),
                       args=("groups",),
                       jvp=lambda ctx, t: apply(CHANNEL_UNSHUFFLE, (t,), (t._data,), ctx._args))
for _op in (PIXEL_SHUFFLE, PIXEL_UNSHUFFLE, CONSTANT_PAD):
    _batching.RULES[_op] = _batch_passthrough


def _channel_batch_rule(c: Any, args: tuple) -> Tensor:
    # merge the batch dim into N, shuffle, split it again
    t = c.ts[0]
    shape = tuple(t.shape)
    flat = t.reshape((shape[0] * shape[1],) + shape[2:])
    out = apply(c.op, (flat,), (flat._data,), args)
    return out.reshape(shape)


_batching.RULES[CHANNEL_SHUFFLE] = _batching.RULES[CHANNEL_UNSHUFFLE] = _channel_batch_rule


def _shuffle_check(x: np.ndarray, name: str, r: int, what: str) -> None:
    if x.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {x.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {r}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearrange ``(*, C*r*r, H, W)`` into ``(*, C, H*r, W*r)``.

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.pixel_shuffle(ndgrad.arange(4.0).reshape(1, 4, 1, 1), 2).reshape(-1).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    if input._blevel:  # Note [Batched backward]
        r = _batching.call(pixel_shuffle, input, upscale_factor)
        if r is not NotImplemented:
            return r
    x, r = input._data, int(upscale_factor)
    _shuffle_check(x, "pixel_shuffle", r, "upscale_factor")
    if x.shape[-3] % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)="
                           f"{x.shape[-3]} is not divisible by {r * r}")
    return apply(PIXEL_SHUFFLE, (input,), (x,), (r,))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Rearrange ``(*, C, H*r, W*r)`` into ``(*, C*r*r, H, W)`` (the inverse of
    ``pixel_shuffle``)."""
    if input._blevel:  # Note [Batched backward]
        r = _batching.call(pixel_unshuffle, input, downscale_factor)
        if r is not NotImplemented:
            return r
    x, r = input._data, int(downscale_factor)
    _shuffle_check(x, "pixel_unshuffle", r, "downscale_factor")
    for d, nm in ((-2, "height"), (-1, "width")):
        if x.shape[d] % r:
            raise RuntimeError(f"pixel_unshuffle expects {nm} to be divisible by "
                               f"downscale_factor, but input.size({d})={x.shape[d]} is not "
                               f"divisible by {r}")
    return apply(PIXEL_UNSHUFFLE, (input,), (x,), (r,))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Split the channels (dim 1) of ``(N, C, *)`` into ``groups`` groups and interleave them.

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.channel_shuffle(ndgrad.arange(4.0).reshape(1, 4, 1), 2).reshape(-1).tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    if input._blevel:  # Note [Batched backward]
        r = _batching.call(channel_shuffle, input, groups)
        if r is not NotImplemented:
            return r
    x, g = input._data, int(groups)
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{g}")
    if x.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {x.ndim} dimension(s)")
    if x.shape[1] % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {x.shape[1]} "
                           f"channels and {g} groups.")
    return apply(CHANNEL_SHUFFLE, (input,), (x,), (g,))


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``channel_shuffle`` (PyTorch's native kernel of it)."""
    return channel_shuffle(input, groups)
