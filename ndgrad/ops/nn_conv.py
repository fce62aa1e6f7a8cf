"""nn op family: convolutions (conv1d/2d/3d, conv_transpose1d/2d/3d) and unfold/fold.

Note [Convolution as three ops]
A convolution ``y = conv(x, w)`` is bilinear, and so are the two maps its gradients need:

* ``conv(x, w)``: ``y[n, o, l] = sum_{c, k} w[o, c, k] * cols(x)[n, c, k, l]``, where ``cols``
  is im2col: the (zero-padded) windows of ``x`` read through one strided view
  (``as_strided``, no copy) and gathered by one reshape;
* ``conv_t(g, w)``: its adjoint in ``x`` (``<conv_t(g, w), x> = <g, conv(x, w)>``): one matmul
  to columns, then col2im (a strided add per kernel offset, not per pixel). This is also
  ``conv_transpose`` of torch, whose weight is exactly the weight of the adjoint convolution;
* ``wgrad(x, g)``: its adjoint in ``w`` (``<wgrad(x, g), w> = <g, conv(x, w)>``): im2col of
  ``x`` and one batched matmul with ``g``.

Each is the adjoint of the others in one argument, so the VJP of each is written with the other
two (a complex operand is conjugated), and the set is closed under differentiation: gradgrad and
forward-over-reverse work to any order. JVPs are bilinear. Every matmul goes through BLAS
(``np.matmul`` over a stack: per batch and group one GEMM); there is no Python loop over batch,
channels or pixels. The public ``convolution`` op (node ``ConvolutionBackward0``, with torch's
saved attributes) is ``conv`` or ``conv_t`` plus the bias; the internal ops record
``ConvolutionBackwardBackward0`` as torch's double backward does. Float16/bfloat16 compute in
float32 and round once (the bias included), as torch's CPU kernels accumulate.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> x = ndgrad.ones(1, 1, 3, 3, requires_grad=True)
    >>> y = F.conv2d(x, ndgrad.ones(1, 1, 2, 2))
    >>> y
    tensor([[[[4., 4.],
              [4., 4.]]]], grad_fn=<ConvolutionBackward0>)
    >>> y.sum().backward(); x.grad[0, 0]
    tensor([[1., 2., 1.],
            [2., 4., 2.],
            [1., 2., 1.]])
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import weakref
from typing import Any, Callable, Optional

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import _dtype, _write_watch
from ..autograd.grad_mode import _state as _grad_state
from ..tensor import Tensor
from . import shape as _shape
from ._batching import RULES
from ._batching import call as _bcall
from ._dispatch import Op, apply
from ._jvp import linear
from ._workspace import scratch, zeros_kept
from .fft import CONSTANT_PAD
from . import _autocast
from ._channels_last import keep as _keep_cl

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold"]

SIGNATURES = """
conv1d(Tensor input, Tensor weight, Tensor? bias=None, Any stride=1, Any padding=0, Any dilation=1, int groups=1)
conv2d(Tensor input, Tensor weight, Tensor? bias=None, Any stride=1, Any padding=0, Any dilation=1, int groups=1)
conv3d(Tensor input, Tensor weight, Tensor? bias=None, Any stride=1, Any padding=0, Any dilation=1, int groups=1)
conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, Any stride=1, Any padding=0, Any output_padding=0, int groups=1, Any dilation=1)
conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, Any stride=1, Any padding=0, Any output_padding=0, int groups=1, Any dilation=1)
conv_transpose3d(Tensor input, Tensor weight, Tensor? bias=None, Any stride=1, Any padding=0, Any output_padding=0, int groups=1, Any dilation=1)
unfold(Tensor input, Any kernel_size, Any dilation=1, Any padding=0, Any stride=1)
fold(Tensor input, Any output_size, Any kernel_size, Any dilation=1, Any padding=0, Any stride=1)
"""  # noqa: E501

_LOWP = _dtype.HALF_NP
_F32 = np.dtype(np.float32)


# ---------------------------------------------------------------------------- kernels
def _out_size(size: tuple, k: tuple, stride: tuple, pad: tuple, dil: tuple) -> tuple:
    return tuple((n + 2 * p - d * (kk - 1) - 1) // s + 1
                 for n, kk, s, p, d in zip(size, k, stride, pad, dil))


def _padded(x: np.ndarray, pad: tuple, slot: Optional[str] = None) -> np.ndarray:
    """``x`` (N, C, *S) zero-padded by ``pad[i]`` on both sides of spatial dim ``i`` (into
    scratch ``slot`` when given: Note [Kernel workspace])."""
    if not any(pad):
        return x
    shape = x.shape[:2] + tuple(n + 2 * p for n, p in zip(x.shape[2:], pad))
    out = np.zeros(shape, x.dtype) if slot is None else scratch(slot, shape, x.dtype, zero=True)
    out[(Ellipsis,) + tuple(slice(p, p + n) for n, p in zip(x.shape[2:], pad))] = x
    return out


def _cols(x: np.ndarray, k: tuple, stride: tuple, pad: tuple, dil: tuple, groups: int,
          out: tuple, fresh: bool = False) -> np.ndarray:
    """im2col: ``(N, groups, C/groups * prod(k), prod(out))`` (Note [Convolution as three ops]),
    in scratch (Note [Kernel workspace]), or a new array if ``fresh``."""
    xp = _padded(x, pad, "pad")
    s = xp.strides
    nd = len(k)
    v = as_strided(xp, xp.shape[:2] + tuple(k) + tuple(out),
                   s[:2] + tuple(s[2 + i] * dil[i] for i in range(nd))
                   + tuple(s[2 + i] * stride[i] for i in range(nd)), writeable=False)
    n, c = x.shape[:2]
    return _copy_cols(v, (n, groups, (c // groups) * math.prod(k), math.prod(out)), fresh)


def _copy_cols(v: np.ndarray, shape: tuple, fresh: bool) -> np.ndarray:
    """The strided im2col view ``v`` copied into an array of ``shape``: scratch (Note [Kernel
    workspace]), or a new array if ``fresh``."""
    cols = np.empty(shape, v.dtype) if fresh else scratch("cols", shape, v.dtype)
    np.copyto(cols.reshape(v.shape), v)
    return cols


def _col2im(cols: np.ndarray, size: tuple, k: tuple, stride: tuple, pad: tuple,
            dil: tuple) -> np.ndarray:
    """The adjoint of im2col: ``cols`` (N, C, *k, *out) summed into (N, C, *size)."""
    n, c = cols.shape[:2]
    nd = len(k)
    out = cols.shape[2 + nd:]
    xp = np.zeros((n, c) + tuple(m + 2 * p for m, p in zip(size, pad)), cols.dtype)
    for off in itertools.product(*[range(kk) for kk in k]):
        idx = (Ellipsis,) + tuple(slice(o * d, o * d + s * (m - 1) + 1, s)
                                  for o, d, s, m in zip(off, dil, stride, out))
        xp[idx] += cols[(slice(None), slice(None)) + off]
    if any(pad):   # cropped, and contiguous as torch's result is
        xp = np.ascontiguousarray(xp[(Ellipsis,) + tuple(slice(p, p + m)
                                                         for m, p in zip(size, pad))])
    return xp


def _lowp(*arrays: np.ndarray) -> tuple:
    dt = arrays[0].dtype
    if dt in _LOWP:
        return dt, tuple(a.astype(_F32) for a in arrays)
    return None, arrays


def _view(base: np.ndarray, shape: tuple, strides: tuple, offset: int = 0) -> np.ndarray:
    """A read-only strided view of the C-contiguous ``base`` starting ``offset`` elements in
    (``as_strided`` without its ~6 us of Python; NumPy checks the bounds)."""
    v = np.ndarray(shape, base.dtype, base, offset * base.itemsize, strides)
    v.flags.writeable = False
    return v


# Note [Convolution kernels]
# Each kernel is one stacked ``np.matmul`` over the batch (per sample and group one GEMM: small
# GEMMs stay on one BLAS thread, which measured faster here than one large GEMM per group over
# the whole batch, whose threads stall on a loaded 2-core machine) around one im2col copy or
# one col2im accumulation.
#
# col2im with stride 1 uses a "wide" grid. The windows of the padded input, flattened per
# (sample, channel) row (length T = prod(Sp)), start at flat offsets
# ``f_k = sum_i k_i * dil_i * P_i`` (P: the row-major strides of Sp), and output position ``o``
# reads ``f_k + sum_i o_i * P_i``. Laying the cotangent on the grid (out_0, *Sp[1:]), zeros at
# the extra positions, makes the contribution of each kernel offset one contiguous range
# ``[f_k, f_k + Lw)`` (the extra positions add zeros), which col2im sums in one strided
# reduction (Note [Col2im as one reduction]).
@functools.lru_cache(maxsize=256)
def _wide(size: tuple, k: tuple, pad: tuple, dil: tuple) -> tuple:
    sp = tuple(n + 2 * p for n, p in zip(size, pad))
    P = tuple(math.prod(sp[i + 1:]) for i in range(len(sp)))
    out = tuple(m - d * (kk - 1) for m, d, kk in zip(sp, dil, k))
    slack = sum((kk - 1) * d * q for kk, d, q in zip(k[1:], dil[1:], P[1:]))
    offs = tuple(sum(o * d * q for o, d, q in zip(off, dil, P))
                 for off in itertools.product(*[range(kk) for kk in k]))
    return sp, P, out, out[0] * P[0], slack, offs


def _widen(g: np.ndarray, sp: tuple) -> np.ndarray:
    """(N, C, *out) on the wide grid (N, C, out_0 * prod(sp[1:])), zeros elsewhere."""
    out = g.shape[2:]
    if out[1:] == sp[1:]:
        return g.reshape(g.shape[:2] + (-1,))
    w = scratch("widen", g.shape[:3] + sp[1:], g.dtype)
    if not zeros_kept("widen", w, (w.shape, w.dtype, out)):
        # zeros only where g does not land: per dim i, past out[i] (earlier dims inside out)
        for i in range(1, len(out)):
            w[(slice(None),) * 3 + tuple(slice(0, m) for m in out[1:i])
              + (slice(out[i], None),)] = 0
    w[(Ellipsis,) + tuple(slice(0, m) for m in out[1:])] = g
    return w.reshape(g.shape[:2] + (-1,))


# Note [Col2im as one reduction]
# col2im on the wide grid sums, for every position ``q`` of the padded input, the columns of
# every kernel offset ``k`` at ``q - f_k``. When each GEMM row (channel c, offset k) is laid out
# at pitch ``Lp = Lw + 2 * M`` (``M = max f_k``) with its ``Lw`` values in ``[M, M + Lw)`` and
# zeros in both margins, the value for (c, k, q) sits at ``(c * K + k) * Lp + M + q - f_k``:
# an affine function of (c, each k_i, each q_i) with strides ``K * Lp``, ``R_i * Lp - d_i * P_i``
# (``R_i = prod(k[i+1:])``) and ``P_i``. So one strided view (no copy) of the GEMM's output,
# restricted to the unpadded positions, summed over its kernel axes by one ``np.add.reduce``
# is the whole col2im, cropped: ~2.5x faster than ``prod(k)`` read-modify-write passes over the
# padded input plus a crop copy. Every read stays in its own row (``0 <= M - f_k`` and
# ``M + T - f_k <= Lp``, T the padded size). The extra positions of the wide grid carry the
# GEMM of the widened cotangent's zeros: exact zeros when the weight is finite (the caller
# checks), as are the margins.
def _wide_col2im(g: np.ndarray, wm: np.ndarray, c: int, size: tuple, k: tuple, pad: tuple,
                 dil: tuple, gw: Optional[np.ndarray] = None) -> np.ndarray:
    """conv_t with stride 1 as GEMM + col2im on the wide grid (Note [Col2im as one
    reduction]): ``g`` (N, O, *out), ``wm`` (groups, C/groups * prod(k), O/groups), finite;
    ``gw``: ``_widen(g, sp)`` when the caller has it."""
    n, o = g.shape[:2]
    groups = wm.shape[0]
    sp, P, _, lw, _, offs = _wide(size, k, pad, dil)
    gw = (_widen(g, sp) if gw is None else gw).reshape(n, groups, o // groups, lw)
    m = max(offs)
    lp = lw + 2 * m
    kk = math.prod(k)
    buf = scratch("colsT", (n, c * kk, lp), np.result_type(wm, gw))
    # recorded even when there is no margin (m == 0): that call writes over the margins
    # another layout zeroed in the same memory
    if not zeros_kept("colsT", buf, (buf.shape, buf.dtype, m, lw)) and m:
        buf[:, :, :m] = 0
        buf[:, :, m + lw:] = 0
    np.matmul(wm, gw, out=buf.reshape(n, groups, wm.shape[1], lp)[..., m:m + lw])
    it = buf.itemsize
    nd = len(k)
    start = m + sum(p * q for p, q in zip(pad, P))
    strides = (buf.strides[0], kk * lp * it) + tuple(
        (math.prod(k[i + 1:]) * lp - dil[i] * P[i]) * it for i in range(nd)) + tuple(
        q * it for q in P)
    v = _view(buf, (n, c) + tuple(k) + tuple(size), strides, start)
    return np.add.reduce(v, axis=tuple(range(2, 2 + nd)))


# Note [Wide im2col]
# With stride 1 the forward convolution and the weight gradient read im2col on the same wide
# grid as col2im (Note [Convolution kernels]): the columns of kernel offset ``f_k`` are the
# contiguous range ``[f_k, f_k + Lw)`` of each flattened (sample, channel) row of the padded
# input, so im2col is one copy of whole ranges (``Lw`` elements at a time instead of
# ``out[-1]``, ~3x faster) and its result feeds the GEMM as is. ``Lw = out_0 * P_0 - slack``
# keeps the last range inside the row, and still covers every real output position (the last
# one is ``Lw - 1``). The GEMM computes the extra positions too (cropped from the forward's
# result; ``_WIDE_WASTE`` bounds their share) and the weight gradient multiplies them by the
# zeros of the widened cotangent: an exact zero unless the input holds an inf or NaN there,
# so a weight gradient that is not all finite is recomputed on the exact columns. The compact
# im2col copies runs of ``out[-1]`` elements: for LeNet's second convolution (10 wide) it took
# longer than the 40% more GEMM of the wide grid, hence the bound of 2x.
_WIDE_WASTE = 2.0


def _wide_cols(x: np.ndarray, k: tuple, pad: tuple, dil: tuple, groups: int,
               fresh: bool = False):
    """Wide im2col of ``x`` (Note [Wide im2col]): ``(cols (N, groups, C/groups * prod(k), Lw),
    sp, lw)``, or None where the wide grid would waste too much; the columns in scratch, or a
    new array if ``fresh``."""
    sp, P, out, full, slack, _ = _wide(x.shape[2:], k, pad, dil)
    if full > _WIDE_WASTE * math.prod(out):
        return None
    xp = np.ascontiguousarray(_padded(x, pad, "pad"))
    lw = full - slack
    it = xp.itemsize
    n, c = x.shape[:2]
    v = _view(xp, (n, c) + tuple(k) + (lw,),
              xp.strides[:2] + tuple(d * q * it for d, q in zip(dil, P)) + (it,))
    return _copy_cols(v, (n, groups, (c // groups) * math.prod(k), lw), fresh), sp, out, lw


# Note [Forward columns]
# The weight gradient of a convolution reads the same im2col of the input as the forward
# (Note [Wide im2col], Note [Compact columns for few input channels]). When a convolution is
# recorded for a weight that requires grad, its forward keeps its columns (a fresh array, not
# scratch) for the backward instead of letting it copy them again: ``_kept`` maps the id of the
# input array to an entry [weak reference to that array, the im2col parameters, the columns].
# The backward's ``_wgrad_fwd`` takes the entry (and drops it) only for the very same array
# object with the same parameters; the columns are a pure copy of that array, so the result is
# bit for bit what recomputing gives. The array a node saved is checked against in-place
# changes at unpack (a changed input raises before any kernel runs). The entry lives no longer
# than its input array nor than the node the forward recorded (weak references whose callbacks
# drop it): a new array at a freed one's address cannot match, and a graph dropped without a
# backward frees its columns; so does an ``apply`` that raises after the forward kept them (a
# saved-tensor hook refusing, forward AD: ``_untie``). At most ``_KEPT_MAX`` entries of at most
# ``_KEPT_BYTES`` each are kept (the oldest goes first; a backward that finds none
# recomputes), which bounds the memory held for graphs kept alive without a backward. An
# in-place op writing memory a kept entry was copied from (through ``.data`` or a view of it:
# writes the version check does not see) drops the entry first (Note [Write watchers],
# set only while entries exist), so the weight gradient reads the array as it is then, as
# PyTorch's does. Writing into the array behind ndgrad's back (through ``.numpy()``) is not
# seen: the kept columns then hold the old values.
_KEPT_MAX = 8
_KEPT_BYTES = 16 << 20
_kept: dict = {}
# Reentrant: a collection triggered inside the lock may run a callback (_drop) on this thread.
_kept_lock = threading.RLock()
_keep_flag = threading.local()   # .on: the forward may keep; .entry: the entry it kept


def _drop(i: int, token: object) -> None:
    with _kept_lock:
        e = _kept.get(i)
        if e is not None and e[3] is token:
            _kept.pop(i, None)
            _watch_writes()


def _watch_writes() -> None:
    """In-place writes are watched while columns are kept (called under ``_kept_lock``)."""
    _write_watch.set_watcher("conv columns", _written if _kept else None)


def _written(arr: np.ndarray) -> None:
    """An in-place op is about to write ``arr`` (through any tensor: ``.data``, ``detach()``,
    a view): columns kept from an array sharing its memory are stale, drop them."""
    with _kept_lock:
        for i, e in list(_kept.items()):
            x = e[0]()
            if x is None or np.may_share_memory(arr, x):
                _kept.pop(i, None)
        _watch_writes()


def _dropper(i: int, token: object) -> Callable[[Any], None]:
    """A weak reference callback dropping entry ``i`` if it is still the one of ``token``."""
    def drop(_: Any) -> None:
        _drop(i, token)
    return drop


def _keep(x: np.ndarray, key: tuple, cols: tuple) -> None:
    if cols[0].nbytes > _KEPT_BYTES:
        return
    i = id(x)
    token = object()   # the callbacks hold this, not the entry: no cycle keeps the columns
    entry = [weakref.ref(x, _dropper(i, token)), key, cols, token, None]
    with _kept_lock:
        _kept.pop(i, None)
        while len(_kept) >= _KEPT_MAX:   # the oldest goes (a list: no live dict iterator)
            _kept.pop(list(_kept)[0], None)
        _kept[i] = entry
        _watch_writes()
    _keep_flag.entry = (i, token, entry)


def _take(x: np.ndarray, key: tuple) -> Optional[tuple]:
    with _kept_lock:
        e = _kept.get(id(x))
        if e is None or e[0]() is not x or e[1] != key:
            return None
        _kept.pop(id(x), None)
        _watch_writes()
    return e[2]


def _untie() -> None:
    """Drops the entry the forward just kept, if any (``apply`` raised after the forward:
    a saved-tensor hook, forward AD, anomaly mode), Note [Forward columns]."""
    kept = getattr(_keep_flag, "entry", None)
    if kept is not None:
        _keep_flag.entry = None
        _drop(kept[0], kept[1])


def _tie(result: Tensor) -> None:
    """Ties the entry the forward just kept to the node recorded for ``result`` (none: drops
    it), Note [Forward columns]."""
    kept = getattr(_keep_flag, "entry", None)
    if kept is None:
        return
    _keep_flag.entry = None
    i, token, entry = kept
    node = result._grad_fn
    if node is None:
        _drop(i, token)
    else:
        entry[4] = weakref.ref(node, _dropper(i, token))


# Note [Compact columns for few input channels]
# The wide grid (Note [Wide im2col]) makes im2col ~3x cheaper but costs a crop of the forward's
# result and a widened copy of the cotangent for the weight gradient: two passes over O
# channels against a cheaper copy of C/groups * prod(k) rows. With few input rows per output
# channel (the first convolution of a network: C = 1, 3x3 kernel, 8 outputs) the compact
# columns, shared by the forward and the weight gradient (Note [Forward columns]), are faster
# (~40% for that one); for C/groups * prod(k) > 2 * O/groups the wide grid is.
def _compact(c: int, k: tuple, o: int, groups: int) -> bool:
    return (c // groups) * math.prod(k) <= 2 * (o // groups)


def _conv_fwd(x, w, stride, pad, dil, groups, keep=False):
    """conv: ``x`` (N, C, *S), ``w`` (O, C/groups, *k) -> (N, O, *out); ``keep``: keep the
    columns for the weight gradient (Note [Forward columns])."""
    dt, (x, w) = _lowp(x, w)
    n, o = x.shape[0], w.shape[0]
    k = w.shape[2:]
    wm = w.reshape(groups, o // groups, -1)
    keep = keep and dt is None and x.dtype.kind == "f"
    key = (k, stride, pad, dil, groups, x.shape, x.dtype)
    wide = (_wide_cols(x, k, pad, dil, groups, keep)
            if all(s == 1 for s in stride) and not _compact(x.shape[1], k, o, groups) else None)
    if wide is not None:
        if keep:
            _keep(x, key, wide)
        cols, sp, out, lw = wide
        full = out[0] * math.prod(sp[1:])
        crop = sp[1:] != out[1:]
        y = scratch("out", (n, o, full), cols.dtype) if crop else np.empty((n, o, full),
                                                                           cols.dtype)
        np.matmul(wm, cols, out=y.reshape(n, groups, o // groups, full)[..., :lw])
        y = y.reshape((n, o, out[0]) + sp[1:])
        if crop:
            y = y[(Ellipsis,) + tuple(slice(0, m) for m in out[1:])].copy()
        return y if dt is None else y.astype(dt)
    out = _out_size(x.shape[2:], k, stride, pad, dil)
    cols = _cols(x, k, stride, pad, dil, groups, out, keep)
    if keep:
        _keep(x, key, (cols,))
    y = np.matmul(wm, cols).reshape((n, o) + out)
    return y if dt is None else y.astype(dt)


# Note [Transposed convolution as a full correlation]
# With stride 1, conv_t(g, w) is the convolution of ``g`` padded by ``d * (k - 1) - p`` with
# the spatially flipped weight, its two channel axes swapped per group: the wide im2col and one
# stacked GEMM of the forward (Note [Wide im2col]) instead of a GEMM to columns and col2im.
# Its im2col copies O * prod(k) rows where col2im's GEMM writes C * prod(k) and sums them in
# one reduction (Note [Col2im as one reduction]), so it is taken when O < C (measured here:
# O = 8, C = 16, 3x3: 250 against 320 us; O = 16, C = 8: 330 against 250 us for col2im) and
# the padding is at most ``d * (k - 1)``.
def _convt_fwd(g, w, stride, pad, dil, groups, size, gw=None):
    """conv_t: ``g`` (N, O, *out), ``w`` (O, C/groups, *k) -> (N, C, *size); ``gw``: ``g``
    widened to the padded grid, when the caller has it."""
    dt, (g, w) = _lowp(g, w)
    n, o = g.shape[:2]
    k = w.shape[2:]
    out = g.shape[2:]
    c = w.shape[1] * groups
    unit = all(s == 1 for s in stride) and _out_size(size, k, stride, pad, dil) == out
    if unit and o < c and all(p <= d * (kk - 1) for p, d, kk in zip(pad, dil, k)):
        # Note [Transposed convolution as a full correlation]
        wf = w[(Ellipsis,) + (slice(None, None, -1),) * len(k)]
        wf = wf.reshape((groups, o // groups, c // groups) + tuple(k)).swapaxes(1, 2)
        x = _conv_fwd(g, wf.reshape((c, o // groups) + tuple(k)), stride,
                      tuple(d * (kk - 1) - p for p, d, kk in zip(pad, dil, k)), dil, groups)
        return x if dt is None else x.astype(dt)
    wm = w.reshape(groups, o // groups, -1).transpose(0, 2, 1)
    if unit and np.isfinite(np.add.reduce(wm, axis=None)):
        x = _wide_col2im(g, wm, c, size, k, pad, dil, gw)
    else:
        cols = np.matmul(wm, g.reshape(n, groups, o // groups, -1))
        x = _col2im(cols.reshape((n, c) + tuple(k) + tuple(out)), size, k, stride, pad, dil)
    return x if dt is None else x.astype(dt)


def _wgrad_fwd(x, g, stride, pad, dil, groups, k, gw=None):
    """wgrad: ``x`` (N, C, *S), ``g`` (N, O, *out) -> (O, C/groups, *k); ``gw``: ``g`` widened
    to the padded grid, when the caller has it."""
    dt, (x, g) = _lowp(x, g)
    n, o = g.shape[:2]
    out = g.shape[2:]
    # Note [Forward columns]: the forward's columns, wide (4 entries) or compact (1)
    kept = _take(x, (k, stride, pad, dil, groups, x.shape, x.dtype)) if dt is None else None
    if all(s == 1 for s in stride) and g.dtype.kind == "f" and not _compact(x.shape[1], k, o,
                                                                              groups):
        wide = kept if kept is not None and len(kept) == 4 else _wide_cols(x, k, pad, dil,
                                                                            groups)
        if wide is not None and wide[2] == out:
            cols, sp, _, lw = wide
            gw = (_widen(g, sp) if gw is None else gw)[..., :lw].reshape(n, groups,
                                                                          o // groups, lw)
            # (columns @ cotangent^T)^T: ~15% faster here than cotangent @ columns^T
            wt = np.matmul(cols, gw.transpose(0, 1, 3, 2))        # (N, groups, K, O/groups)
            wt = wt[0] if n == 1 else wt.sum(0)
            w = np.ascontiguousarray(wt.transpose(0, 2, 1)).reshape(
                (o, x.shape[1] // groups) + tuple(k))
            if np.isfinite(np.add.reduce(w, axis=None)):
                return w if dt is None else w.astype(dt)
    if kept is not None and len(kept) == 1 and kept[0].shape[-1] == math.prod(out):
        cols = kept[0]
    else:
        cols = _cols(x, k, stride, pad, dil, groups, out)
    gm = g.reshape(n, groups, o // groups, -1)
    if n == 1:
        w = np.matmul(gm[0], cols[0].transpose(0, 2, 1))
    else:
        w = np.matmul(gm, cols.transpose(0, 1, 3, 2)).sum(0)
    w = w.reshape((o, x.shape[1] // groups) + tuple(k))
    return w if dt is None else w.astype(dt)


def _convolution_fwd(x, w, *rest):
    if len(rest) == 8:
        b, rest = rest[0], rest[1:]
    else:
        b = None
    _, stride, pad, dil, transposed, out_pad, groups = rest
    dt = x.dtype
    if b is not None and dt in _LOWP and not (transposed and dt == np.float16):
        # torch's bfloat16 (and float16 forward) kernels add the bias to the float32
        # accumulator and round once; float16 conv_transpose rounds before the bias
        x, w, b = (a.astype(_F32) for a in (x, w, b))
        return _convolution_fwd(x, w, b, *rest).astype(dt)
    if transposed:
        size = tuple((n - 1) * s - 2 * p + d * (kk - 1) + op + 1 for n, s, p, d, kk, op in
                     zip(x.shape[2:], stride, pad, dil, w.shape[2:], out_pad))
        y = _convt_fwd(x, w, stride, pad, dil, groups, size)
    else:
        y = _conv_fwd(x, w, stride, pad, dil, groups, getattr(_keep_flag, "on", False))
    if b is not None:
        y += b.reshape((-1,) + (1,) * (y.ndim - 2)).astype(y.dtype, copy=False)
    return y


# ---------------------------------------------------------------------------- the ops
def _cj(t: Tensor) -> Tensor:
    return t.conj() if t._data.dtype.kind == "c" else t


def _conv(x: Tensor, w: Tensor, p: tuple) -> Tensor:
    return apply(CONV2, (x, w), (x._data, w._data), p)


def _convt(g: Tensor, w: Tensor, p: tuple, size: tuple) -> Tensor:
    return apply(CONVT2, (g, w), (g._data, w._data), p + (tuple(size),))


def _wgrad(x: Tensor, g: Tensor, p: tuple, k: tuple) -> Tensor:
    return apply(WGRAD2, (x, g), (x._data, g._data), p + (tuple(k),))


def _fit(t: Tensor, shape: tuple) -> Tensor:
    """``t`` cut to ``shape`` on the spatial dims (a conv of a transposed conv's output can be
    one larger when output_padding >= stride, which torch allows for dilation > 1)."""
    if tuple(t.shape[2:]) == tuple(shape[2:]):
        return t
    return t[(Ellipsis,) + tuple(slice(0, m) for m in shape[2:])]


def _conv_vjp(ctx, g):
    x, w = ctx.saved[:2]
    stride, pad, dil, transposed, _, groups = ctx._args[1:]
    p = (stride, pad, dil, groups)
    xshape, wshape = ctx.input_shape(0), ctx.input_shape(1)
    gx = gw = None
    if not transposed:
        if ctx.needs_input_grad(0):
            gx = _convt(g, _cj(w), p, xshape[2:])
        if ctx.needs_input_grad(1):
            gw = _wgrad(_cj(x), g, p, wshape[2:])
    else:
        if ctx.needs_input_grad(0):
            gx = _fit(_conv(g, _cj(w), p), xshape)
        if ctx.needs_input_grad(1):
            gw = _wgrad(g, _cj(x), p, wshape[2:])
    if type(ctx)._op is CONV_NB:
        return gx, gw
    gb = g.sum([0] + list(range(2, len(xshape)))) if ctx.needs_input_grad(2) else None
    return gx, gw, gb


def _conv_raw(ctx, g, saved):
    # Note [Raw backward rules] (ops/_dispatch.py): _conv_vjp on arrays (real, not transposed),
    # the cotangent widened once for both kernels when both run on the wide grid (the same
    # exact copy each would make).
    stride, pad, dil, transposed, _, groups = ctx._args[1:]
    if transposed:
        return NotImplemented
    x, w = saved
    xshape, wshape = ctx._input_meta[0][0], ctx._input_meta[1][0]
    need_x, need_w = ctx.needs_input_grad(0), ctx.needs_input_grad(1)
    gw = None
    if need_x and need_w and all(s == 1 for s in stride):
        gw = _widen(g, tuple(m + 2 * p for m, p in zip(xshape[2:], pad)))
    gx = _convt_fwd(g, w, stride, pad, dil, groups, xshape[2:], gw) if need_x else None
    gk = _wgrad_fwd(x, g, stride, pad, dil, groups, wshape[2:], gw) if need_w else None
    if type(ctx)._op is CONV_NB:
        return gx, gk
    gb = (np.add.reduce(g, axis=tuple([0] + list(range(2, len(xshape)))))
          if ctx.needs_input_grad(2) else None)
    return gx, gk, gb


def _conv_jvp(ctx, tx, tw, tb=None):
    x, w = ctx.inputs[:2]
    stride, pad, dil, transposed, _, groups = ctx._args[1:]
    p = (stride, pad, dil, groups)
    size = ctx.result.shape[2:]
    out = None
    for a, b in ((tx, w), (x, tw)):
        if a is None or b is None:
            continue
        r = _convt(a, b, p, size) if transposed else _conv(a, b, p)
        out = r if out is None else out + r
    if tb is not None:
        r = tb.reshape((-1,) + (1,) * (len(size)))
        out = r.expand(ctx.result.shape) if out is None else out + r
    return out


def _conv2_vjp(ctx, g):
    x, w = ctx.saved
    p = ctx._args
    gx = _convt(g, _cj(w), p, ctx.input_shape(0)[2:]) if ctx.needs_input_grad(0) else None
    gw = _wgrad(_cj(x), g, p, ctx.input_shape(1)[2:]) if ctx.needs_input_grad(1) else None
    return gx, gw


def _convt2_vjp(ctx, g):
    a, w = ctx.saved
    p = ctx._args[:4]
    ga = _fit(_conv(g, _cj(w), p), ctx.input_shape(0)) if ctx.needs_input_grad(0) else None
    gw = _wgrad(g, _cj(a), p, ctx.input_shape(1)[2:]) if ctx.needs_input_grad(1) else None
    return ga, gw


def _wgrad2_vjp(ctx, g):
    x, a = ctx.saved
    p = ctx._args[:4]
    gx = _convt(_cj(a), g, p, ctx.input_shape(0)[2:]) if ctx.needs_input_grad(0) else None
    ga = _fit(_conv(_cj(x), g, p), ctx.input_shape(1)) if ctx.needs_input_grad(1) else None
    return gx, ga


def _bilinear_jvp(f):
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        out = f(ctx, ta, b) if ta is not None else None
        if tb is not None:
            r = f(ctx, a, tb)
            out = r if out is None else out + r
        return out
    return jvp


_CONV_ARGS = ("bias_sym_sizes_opt", "stride", "padding", "dilation", "transposed",
              "output_padding", "groups")
_P_ARGS = ("stride", "padding", "dilation", "groups")
CONV = Op("convolution", "ConvolutionBackward0", _convolution_fwd, _conv_vjp,
          inputs=("input", "weight", "bias"), saves=("input", "weight"), args=_CONV_ARGS,
          save_if=((1,), (0,)), jvp=_conv_jvp, raw=_conv_raw)
CONV_NB = Op("convolution", "ConvolutionBackward0", _convolution_fwd, _conv_vjp,
             inputs=("input", "weight"), saves=("input", "weight"), args=_CONV_ARGS, pad=1,
             save_if=((1,), (0,)), jvp=_conv_jvp, raw=_conv_raw)
CONV2 = Op("_conv", "ConvolutionBackwardBackward0", _conv_fwd, _conv2_vjp,
           inputs=("input", "weight"), saves=("input", "weight"), args=_P_ARGS,
           save_if=((1,), (0,)),
           jvp=_bilinear_jvp(lambda ctx, a, b: _conv(a, b, ctx._args)))
CONVT2 = Op("_conv_t", "ConvolutionBackwardBackward0", _convt_fwd, _convt2_vjp,
            inputs=("grad_output", "weight"), saves=("grad_output", "weight"), save_if=((1,), (0,)),
            args=_P_ARGS + ("input_size",),
            jvp=_bilinear_jvp(lambda ctx, a, b: _convt(a, b, ctx._args[:4], ctx._args[4])))
WGRAD2 = Op("_conv_wgrad", "ConvolutionBackwardBackward0", _wgrad_fwd, _wgrad2_vjp,
            inputs=("input", "grad_output"), saves=("input", "grad_output"), save_if=((1,), (0,)),
            args=_P_ARGS + ("kernel_size",),
            jvp=_bilinear_jvp(lambda ctx, a, b: _wgrad(a, b, ctx._args[:4], ctx._args[4])))


# ---------------------------------------------------------------------------- unfold / fold
def _im2col_fwd(x, k, dil, pad, stride):
    out = _out_size(x.shape[2:], k, stride, pad, dil)
    return _cols(x, k, stride, pad, dil, 1, out)[:, 0].copy()


def _col2im_fwd(c, size, k, dil, pad, stride):
    n = c.shape[0]
    out = _out_size(size, k, stride, pad, dil)
    ch = c.shape[1] // math.prod(k)
    return _col2im(c.reshape((n, ch) + tuple(k) + out), size, k, stride, pad, dil)


def _im2col_vjp(ctx, g):
    k, dil, pad, stride = ctx._args
    return apply(COL2IM, (g,), (g._data,), (tuple(ctx.input_shape(0)[2:]), k, dil, pad, stride))


def _col2im_vjp(ctx, g):
    _, k, dil, pad, stride = ctx._args
    return apply(IM2COL, (g,), (g._data,), (k, dil, pad, stride))


IM2COL = Op("im2col", "Im2ColBackward0", _im2col_fwd, _im2col_vjp,
            args=("kernel_size", "dilation", "padding", "stride"), jvp=linear)
COL2IM = Op("col2im", "Col2ImBackward0", _col2im_fwd, _col2im_vjp,
            args=("output_size", "kernel_size", "dilation", "padding", "stride"), jvp=linear)


# ---------------------------------------------------------------------------- argument checks
def _int_list_arg(v: Any, name: str, fn: str) -> None:
    """torch's argument parser on an ``int[]`` argument that is not one: its TypeError
    (a str or float, a sequence holding a non-int; ``ConvTranspose*(padding="same")`` passes
    the characters of "same")."""
    def is_int(e: Any) -> bool:
        return isinstance(e, (int, np.integer)) and not isinstance(e, bool) or \
            isinstance(e, Tensor) and e.ndim == 0 and not e.is_floating_point()
    if is_int(v):
        return
    if not isinstance(v, (tuple, list)):
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not "
                        f"{type(v).__name__}")
    for i, e in enumerate(v):
        if not is_int(e):
            if i == 0:
                raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but found "
                                f"element of type {type(e).__name__} at pos 0")
            raise TypeError(f"{fn}(): argument '{name}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(e).__name__}\"")


def _ints(v: Any, n: int, name: str) -> tuple:
    """An int or a sequence of ``n`` ints (one is repeated), with torch's message."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),) * n
    if isinstance(v, Tensor) and v.ndim == 0 and not v.is_floating_point():
        return (int(v.item()),) * n
    if isinstance(v, (tuple, list)) and all(
            isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v):
        v = tuple(int(e) for e in v)
        if len(v) == 1:
            return v * n
        if len(v) == n:
            return v
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values to match the convolution dimensions, but got "
                           f"{name}={list(v)}")
    raise TypeError(f"{name} must be an int or a tuple of ints, not {type(v).__name__}")


def _shape_str(s: Any) -> str:
    return "[" + ", ".join(str(int(i)) for i in s) + "]"


def _dname(a: np.ndarray) -> str:
    return _dtype._FROM_NP[a.dtype]._torch_name


def _check_dtypes(x: Tensor, w: Tensor, b: Optional[Tensor], fn: str,
                  weight_first: bool = False) -> None:
    xd, wd = x._data.dtype, w._data.dtype
    if weight_first and xd != wd:       # padding="same"/"valid": torch's other path
        raise RuntimeError(f"expected scalar type {_dname(x._data)} but found "
                           f"{_dname(w._data)}")
    # torch checks the bias first; a transposed convolution's bias is not checked (torch
    # adds it in the output's dtype)
    if b is not None and b._data.dtype != xd and "transpose" not in fn:
        raise RuntimeError(f"Input type ({_dname(x._data).lower()}) and bias type "
                           f"({_dname(b._data).lower()}) should be the same")
    if xd != wd:
        raise RuntimeError(f"expected scalar type {_dname(x._data)} but found "
                           f"{_dname(w._data)}")
    if xd == np.bool_:
        raise NotImplementedError(f"\"slow_conv{len(x.shape) - 2}d_cpu\" not implemented for "
                                  "'Bool'")


# Argument signatures _check_common passed (shapes, dtypes, arguments): the checks are a pure
# function of them, so a training loop's repeated calls skip them (~5 us a call).
_CHECKED: set = set()


def _check_common(x: Tensor, w: Tensor, b: Optional[Tensor], nd: int, stride: tuple,
                  pad: tuple, dil: tuple, groups: int, transposed: bool,
                  out_pad: tuple = (), weight_first: bool = False) -> None:
    xd, wd = x._data, w._data
    sig: Optional[tuple] = (xd.shape, xd.dtype, wd.shape, wd.dtype,
                            None if b is None else (b._data.shape, b._data.dtype), nd, stride,
                            pad, dil, groups, transposed, out_pad)
    try:
        if sig in _CHECKED:
            return
    except TypeError:          # an unhashable argument: checked (and rejected) below
        sig = None
    _check_args(x, w, b, nd, stride, pad, dil, groups, transposed, out_pad, weight_first)
    if sig is not None:
        if len(_CHECKED) > 4096:
            _CHECKED.clear()
        _CHECKED.add(sig)


def _check_args(x: Tensor, w: Tensor, b: Optional[Tensor], nd: int, stride: tuple,
                pad: tuple, dil: tuple, groups: int, transposed: bool,
                out_pad: tuple = (), weight_first: bool = False) -> None:
    if w.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if w.ndim - 2 != nd and nd != 1:    # PyTorch's first complaint: stride's length (an int
        k = w.ndim - 2                  # argument was expanded to nd values)
        raise RuntimeError(f"expected stride to be a single integer value or a list of {k} "
                           f"values to match the convolution dimensions, but got "
                           f"stride={list(stride)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in pad):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in out_pad):
        raise RuntimeError("negative output_padding is not supported")
    if any(d <= 0 for d in dil):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dil)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if w.ndim != nd + 2 or x.ndim != w.ndim:
        raise RuntimeError(f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional "
                           f"weight {_shape_str(w.shape)}, but got {x.ndim}-dimensional input "
                           f"of size {_shape_str(x.shape)} instead")
    ws, xs = tuple(w.shape), tuple(x.shape)
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {_shape_str(ws)} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"[{_shape_str(ws)}] instead")
    if not transposed:
        if xs[1] != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {_shape_str(ws)}, "
                               f"expected input{_shape_str(xs)} to have {ws[1] * groups} "
                               f"channels, but got {xs[1]} channels instead")
        nb = ws[0]
    else:
        if xs[1] != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {_shape_str(ws)}, expected "
                               f"input{_shape_str(xs)} to have {ws[0]} channels, but got "
                               f"{xs[1]} channels instead")
        nb = ws[1] * groups
    if b is not None and (b.ndim != 1 or b.shape[0] != nb):
        pre = "Given transposed=1, weight" if transposed else "Given weight"
        raise RuntimeError(f"{pre} of size {_shape_str(ws)}, expected bias to be 1-dimensional "
                           f"with {nb} elements, but got bias of size {_shape_str(b.shape)} "
                           "instead")
    if not transposed:
        padded = tuple(n + 2 * p for n, p in zip(xs[2:], pad))
        keff = tuple(d * (k - 1) + 1 for k, d in zip(ws[2:], dil))
        if any(k > n for k, n in zip(keff, padded)):
            raise RuntimeError(f"Calculated padded input size per channel: "
                               f"({' x '.join(map(str, padded))}). Kernel size: "
                               f"({' x '.join(map(str, keff))}). Kernel size can't be greater "
                               "than actual input size")
    else:
        if any(op >= s and op >= d for op, s, d in zip(out_pad, stride, dil)):
            names = ("height", "width") if nd == 2 else ("depth", "height", "width")[-nd:] \
                if nd == 3 else ("width",)
            msg = " ".join(f"output_padding_{n}: {v}" for n, v in zip(names, out_pad)) + " " + \
                " ".join(f"stride_{n}: {v}" for n, v in zip(names, stride)) + " " + \
                " ".join(f"dilation_{n}: {v}" for n, v in zip(names, dil))
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got {msg}")
        size = tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, s, p, d, k, op in
                     zip(xs[2:], stride, pad, dil, ws[2:], out_pad))
        if any(m <= 0 for m in size):
            # torch runs a 1-d transposed conv as a 2-d one of height 1
            given, calc = (((1,) + tuple(xs[2:]), (1,) + size) if nd == 1
                           else (tuple(xs[2:]), size))
            raise RuntimeError(f"Given input size per channel: "
                               f"({' x '.join(map(str, given))}). Calculated output size per "
                               f"channel: ({' x '.join(map(str, calc))}). Output size is too "
                               "small")
    _check_dtypes(x, w, b, "conv_transpose" if transposed else "conv", weight_first)


def _batch_input(input: Tensor, nd: int, fn: str) -> tuple:
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{fn}, but got input of size: {_shape_str(input.shape)}")
    if input.ndim == nd + 1:
        return _shape.unsqueeze(input, 0), True
    return input, False


def _convolution(x: Tensor, w: Tensor, b: Optional[Tensor], stride: tuple, pad: tuple,
                 dil: tuple, transposed: bool, out_pad: tuple, groups: int) -> Tensor:
    args = ((w.shape[0] if not transposed else w.shape[1] * groups,) if b is not None else None,
            stride, pad, dil, transposed, out_pad, groups)
    # Note [Forward columns]: worth keeping only when the weight gradient will be recorded
    keep = not transposed and w._requires_grad and _grad_state.enabled
    if keep:
        _keep_flag.on = True
        _keep_flag.entry = None
    try:
        if b is None:
            y = apply(CONV_NB, (x, w), (x._data, w._data), args)
        else:
            y = apply(CONV, (x, w, b), (x._data, w._data, b._data), args)
    except BaseException:
        if keep:
            _untie()          # no node will take the columns the forward kept: free them now
        raise
    finally:
        if keep:
            _keep_flag.on = False
    if keep:
        _tie(y)
    return y


def _convnd(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride: Any, padding: Any,
            dilation: Any, groups: int, nd: int) -> Tensor:
    fn = f"conv{nd}d"
    if input._blevel or weight._blevel or (bias is not None and bias._blevel):
        r = _bcall(_convnd, input, weight, bias, stride, padding, dilation, groups, nd)
        if r is not NotImplemented:
            return r
    x, unbatched = _batch_input(input, nd, fn)
    stride = _ints(stride, nd, "stride")
    dil = _ints(dilation, nd, "dilation")
    extra = None
    if isinstance(padding, str):
        if padding == "same" and weight.ndim != nd + 2 and weight.ndim >= 3:   # PyTorch's words
            raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-"
                               f"dimensional weight{_shape_str(weight.shape)}, but got "
                               f"{x.ndim}-dimensional input of size {_shape_str(x.shape)} instead")
        if padding == "valid":
            pad = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            if weight.ndim != nd + 2:
                pad = (0,) * nd
            else:
                total = [d * (k - 1) for d, k in zip(dil, weight.shape[2:])]
                pad = tuple(t // 2 for t in total)
                extra = [t % 2 for t in total]
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pad = _ints(padding, nd, "padding")
    if extra is not None and any(extra):
        # torch pads the odd extra on the right first (a ConstantPadNdBackward0 node), and
        # checks the sizes of that padded input
        pads: list = []
        for e in reversed(extra):
            pads += [0, e]
        x = apply(CONSTANT_PAD, (x,), (x._data,), (tuple(pads),))
    _check_common(x, weight, bias, nd, stride, pad, dil, groups, False,
                  weight_first=isinstance(padding, str))
    y = _convolution(x, weight, bias, stride, pad, dil, False, (0,) * nd, groups)
    return _shape.squeeze(y, 0) if unbatched else y


def _conv_transposend(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride: Any,
                      padding: Any, output_padding: Any, groups: int, dilation: Any,
                      nd: int) -> Tensor:
    fn = f"conv_transpose{nd}d"
    if input._blevel or weight._blevel or (bias is not None and bias._blevel):
        r = _bcall(_conv_transposend, input, weight, bias, stride, padding, output_padding,
                   groups, dilation, nd)
        if r is not NotImplemented:
            return r
    for name, v in (("stride", stride), ("padding", padding),
                    ("output_padding", output_padding), ("dilation", dilation)):
        _int_list_arg(v, name, fn)
    x, unbatched = _batch_input(input, nd, fn)
    stride = _ints(stride, nd, "stride")
    pad = _ints(padding, nd, "padding")
    out_pad = _ints(output_padding, nd, "output_padding")
    dil = _ints(dilation, nd, "dilation")
    _check_common(x, weight, bias, nd, stride, pad, dil, groups, True, out_pad)
    y = _convolution(x, weight, bias, stride, pad, dil, True, out_pad, groups)
    return _shape.squeeze(y, 0) if unbatched else y


def conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution over ``input`` (N, C, L) or (C, L) with ``weight`` (O, C/groups, k).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.conv1d(ndgrad.ones(1, 1, 4), ndgrad.ones(1, 1, 2), padding="same").shape
    ndgrad.Size([1, 1, 4])
    """
    if _autocast.active:  # Note [Autocast]
        input, weight, bias = _autocast.lower(input, weight, bias)
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution over ``input`` (N, C, H, W) or (C, H, W) with ``weight``
    (O, C/groups, kH, kW); ``padding`` may be ints, ``"valid"`` or ``"same"``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.conv2d(ndgrad.ones(1, 2, 5, 5), ndgrad.ones(4, 2, 3, 3), stride=2).shape
    ndgrad.Size([1, 4, 2, 2])
    """
    if _autocast.active:  # Note [Autocast]
        input, weight, bias = _autocast.lower(input, weight, bias)
    # Note [Channels-last results] (ops/_channels_last.py)
    return _keep_cl(_convnd(input, weight, bias, stride, padding, dilation, groups, 2), input,
                    weight)


def conv3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D convolution over ``input`` (N, C, D, H, W) or (C, D, H, W).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.conv3d(ndgrad.ones(1, 1, 3, 3, 3), ndgrad.ones(1, 1, 2, 2, 2)).sum().item()
    64.0
    """
    if _autocast.active:  # Note [Autocast]
        input, weight, bias = _autocast.lower(input, weight, bias)
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-D transposed convolution (the gradient of conv1d w.r.t. its input); ``weight`` is
    (C_in, C_out/groups, k).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.conv_transpose1d(ndgrad.ones(1, 1, 3), ndgrad.ones(1, 1, 2))
    tensor([[[1., 2., 2., 1.]]])
    """
    if _autocast.active:  # Note [Autocast]
        input, weight, bias = _autocast.lower(input, weight, bias)
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution; ``weight`` is (C_in, C_out/groups, kH, kW).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.conv_transpose2d(ndgrad.ones(1, 1, 2, 2), ndgrad.ones(1, 3, 3, 3), stride=2).shape
    ndgrad.Size([1, 3, 5, 5])
    """
    if _autocast.active:  # Note [Autocast]
        input, weight, bias = _autocast.lower(input, weight, bias)
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 2)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """3-D transposed convolution; ``weight`` is (C_in, C_out/groups, kD, kH, kW).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.conv_transpose3d(ndgrad.ones(1, 1, 2, 2, 2), ndgrad.ones(1, 1, 2, 2, 2)).shape
    ndgrad.Size([1, 1, 3, 3, 3])
    """
    if _autocast.active:  # Note [Autocast]
        input, weight, bias = _autocast.lower(input, weight, bias)
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 3)


# ---------------------------------------------------------------------------- unfold / fold
def _pair(v: Any, name: str) -> tuple:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),) * 2
    if isinstance(v, (tuple, list)) and len(v) in (1, 2) and all(
            isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v):
        return tuple(int(e) for e in v) * (2 // len(v))
    raise TypeError(f"{name} must be an int or a tuple of two ints")


def _check_fold_args(k: tuple, dil: tuple, pad: tuple, stride: tuple) -> None:
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{k[0]} kernel_width: {k[1]}")
    if any(v <= 0 for v in dil):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: "
                           f"{dil[0]} dilation_width: {dil[1]}")
    if any(v < 0 for v in pad):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {pad[0]} "
                           f"pad_width: {pad[1]}")
    if any(v <= 0 for v in stride):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: "
                           f"{stride[0]} stride_width: {stride[1]}")


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Tensor:
    """Sliding local blocks of a (N, C, H, W) or (C, H, W) input as columns:
    (N, C * kH * kW, L) (im2col).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.unfold(ndgrad.arange(9.0).reshape(1, 1, 3, 3), 2)[0]
    tensor([[0., 1., 3., 4.],
            [1., 2., 4., 5.],
            [3., 4., 6., 7.],
            [4., 5., 7., 8.]])
    """
    if input._blevel:
        r = _bcall(unfold, input, kernel_size, dilation, padding, stride)
        if r is not NotImplemented:
            return r
    k, dil = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    pad, stride = _pair(padding, "padding"), _pair(stride, "stride")
    _check_fold_args(k, dil, pad, stride)
    if input.ndim not in (3, 4) or any(s == 0 for s in input.shape[1:]) or \
            (input.ndim == 3 and input.shape[0] == 0):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{_shape_str(input.shape)}")
    x, unbatched = (_shape.unsqueeze(input, 0), True) if input.ndim == 3 else (input, False)
    out = _out_size(tuple(x.shape[2:]), k, stride, pad, dil)
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input with spatial size ({x.shape[2]}, {x.shape[3]}), "
                           f"kernel_size=({k[0]}, {k[1]}), dilation=({dil[0]}, {dil[1]}), "
                           f"padding=({pad[0]}, {pad[1]}), calculated shape of the array of "
                           f"sliding blocks as ({out[0]}, {out[1]}), but its components must "
                           "be at least one.")
    if x._data.dtype == np.bool_:
        raise NotImplementedError("\"im2col_out_cpu\" not implemented for 'Bool'")
    y = apply(IM2COL, (x,), (x._data,), (k, dil, pad, stride))
    return _shape.squeeze(y, 0) if unbatched else y


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Sums columns (N, C * kH * kW, L) back into a (N, C, H, W) tensor (col2im), the
    adjoint of ``unfold``.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.fold(ndgrad.ones(1, 4, 4), (3, 3), 2)[0, 0]
    tensor([[1., 2., 1.],
            [2., 4., 2.],
            [1., 2., 1.]])
    """
    if input._blevel:
        r = _bcall(fold, input, output_size, kernel_size, dilation, padding, stride)
        if r is not NotImplemented:
            return r
    size, k = _pair(output_size, "output_size"), _pair(kernel_size, "kernel_size")
    dil, pad, stride = _pair(dilation, "dilation"), _pair(padding, "padding"), \
        _pair(stride, "stride")
    _check_fold_args(k, dil, pad, stride)
    if any(v <= 0 for v in size):
        raise RuntimeError(f"output size should be greater than zero, but got output_height: "
                           f"{size[0]} output_width: {size[1]}")
    if input.ndim not in (2, 3) or any(s == 0 for s in input.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{_shape_str(input.shape)}")
    x, unbatched = (_shape.unsqueeze(input, 0), True) if input.ndim == 2 else (input, False)
    kk = k[0] * k[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size=({k[0]}, {k[1]}).")
    out = _out_size(size, k, stride, pad, dil)
    if any(o < 1 for o in out) or out[0] * out[1] != x.shape[2]:
        raise RuntimeError(f"Given output_size=({size[0]}, {size[1]}), kernel_size=({k[0]}, "
                           f"{k[1]}), dilation=({dil[0]}, {dil[1]}), padding=({pad[0]}, "
                           f"{pad[1]}), stride=({stride[0]}, {stride[1]}), expected size of "
                           f"input's dimension 2 to match the calculated number of sliding "
                           f"blocks {out[0]} * {out[1]} = {out[0] * out[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    if x._data.dtype == np.bool_:
        raise NotImplementedError("\"col2im_out_cpu\" not implemented for 'Bool'")
    y = apply(COL2IM, (x,), (x._data,), (size, k, dil, pad, stride))
    return _shape.squeeze(y, 0) if unbatched else y


# ---------------------------------------------------------------------------- batching rules
def _rows(t: Tensor, b: int, batched: int) -> Tensor:
    return t[b] if batched else t


def _loop(c, args, run):
    """Fallback: the op once per batch row, stacked (a Python loop over the vmap dim only)."""
    outs = [run(*[_rows(t, b, d) for t, d in zip(c.ts, c.bd)]) for b in range(c.B)]
    return _shape.stack(outs)


def _fold_first(c, run) -> Any:
    """The vmap dim of the first (batch-like) input folded into its batch dim N."""
    x = c.ts[0]
    B, N = x.shape[0], x.shape[1]
    y = run(_shape.reshape(x, (B * N,) + tuple(x.shape[2:])), *c.ts[1:])
    return _shape.reshape(y, (B, N) + tuple(y.shape[1:]))


def _batched_weight(x: Tensor, w: Tensor, bx: int, p: tuple) -> Tensor:
    """A convolution with a batch of weights (B, O, C/g, *k) as one convolution with B times
    the groups; ``x`` batched (B, N, C, *S) when ``bx``, else shared. Returns (B, N, O, *out)."""
    stride, pad, dil, g = p
    B, Co = w.shape[:2]
    k = tuple(w.shape[3:])
    if bx:
        N = x.shape[1]
        xs = _shape.reshape(_shape.transpose(x, 0, 1), (N, B * x.shape[2]) + tuple(x.shape[3:]))
        y = _conv(xs, _shape.reshape(w, (B * Co,) + tuple(w.shape[2:])), (stride, pad, dil, B * g))
        y = _shape.reshape(y, (N, B, Co) + tuple(y.shape[2:]))
        return _shape.transpose(y, 0, 1)
    # shared input: weights ordered (group, batch, out) so that group j still reads x's group j
    ww = _shape.reshape(w, (B, g, Co // g, w.shape[2]) + k)
    ww = _shape.reshape(_shape.transpose(ww, 0, 1), (g * B * Co // g, w.shape[2]) + k)
    y = _conv(x, ww, p)
    N = x.shape[0]
    out = tuple(y.shape[2:])
    y = _shape.reshape(y, (N, g, B, Co // g) + out)
    y = _shape.permute(y, (2, 0, 1, 3) + tuple(range(4, 4 + len(out))))
    return _shape.reshape(y, (B, N, Co) + out)


def _conv_rule(c, args):
    def run(x, w, b=None):
        return _convolution(x, w, b, *args[1:])
    if c.bd[0] and not any(c.bd[1:]):
        return _fold_first(c, run)
    stride, pad, dil, transposed, _, groups = args[1:]
    if c.bd[1] and not transposed:
        y = _batched_weight(c.ts[0], c.ts[1], c.bd[0], (stride, pad, dil, groups))
        if len(c.ts) == 3:
            b = c.ts[2]
            nd = len(y.shape) - 3
            shape = (b.shape[0], 1, b.shape[1]) if c.bd[2] else (1, 1, b.shape[0])
            y = y + _shape.reshape(b, shape + (1,) * nd)
        return y
    return _loop(c, args, run)


def _conv2_rule(c, args):
    def run(x, w):
        return _conv(x, w, args)
    if c.bd == [1, 0]:
        return _fold_first(c, run)
    return _batched_weight(c.ts[0], c.ts[1], c.bd[0], args)


def _channels_folded(t: Tensor, batched: int, B: int) -> Tensor:
    """(B, N, C, *S) (or a shared (N, C, *S), repeated) as (N, B * C, *S)."""
    if not batched:
        t = _shape.expand(_shape.unsqueeze(t, 0), (B,) + tuple(t.shape))
    return _shape.reshape(_shape.transpose(t, 0, 1),
                          (t.shape[1], B * t.shape[2]) + tuple(t.shape[3:]))


def _convt2_rule(c, args):
    p, size = args[:4], args[4]
    if c.bd == [1, 0]:
        return _fold_first(c, lambda g, w: _convt(g, w, p, size))
    # batched weights: B times the groups
    g, w = c.ts
    B = c.B
    gg = _channels_folded(g, c.bd[0], B)
    if not c.bd[1]:
        w = _shape.expand(_shape.unsqueeze(w, 0), (B,) + tuple(w.shape))
    ww = _shape.reshape(w, (B * w.shape[1],) + tuple(w.shape[2:]))
    x = _convt(gg, ww, p[:3] + (B * p[3],), size)
    x = _shape.reshape(x, (x.shape[0], B, x.shape[1] // B) + tuple(x.shape[2:]))
    return _shape.transpose(x, 0, 1)


def _wgrad2_rule(c, args):
    p, k = args[:4], args[4]
    x, g = c.ts
    if p[3] == 1 and c.bd == [0, 1]:
        # A batch of cotangents (B, N, O, ...) is a convolution with B * O output channels.
        B, N, Co = g.shape[:3]
        gg = _shape.reshape(_shape.transpose(g, 0, 1), (N, B * Co) + tuple(g.shape[3:]))
        w = _wgrad(x, gg, p, k)
        return _shape.reshape(w, (B, Co) + tuple(w.shape[1:]))
    # otherwise B times the groups
    B = c.B
    w = _wgrad(_channels_folded(x, c.bd[0], B), _channels_folded(g, c.bd[1], B),
               p[:3] + (B * p[3],), k)
    return _shape.reshape(w, (B, w.shape[0] // B) + tuple(w.shape[1:]))


def _im2col_rule(c, args):
    return _fold_first(c, lambda x: apply(IM2COL, (x,), (x._data,), args))


def _col2im_rule(c, args):
    return _fold_first(c, lambda x: apply(COL2IM, (x,), (x._data,), args))


RULES[CONV] = RULES[CONV_NB] = _conv_rule
RULES[CONV2] = _conv2_rule
RULES[CONVT2] = _convt2_rule
RULES[WGRAD2] = _wgrad2_rule
RULES[IM2COL] = _im2col_rule
RULES[COL2IM] = _col2im_rule
