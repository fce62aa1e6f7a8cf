"""nn op family: max/avg/adaptive/lp/fractional pooling and max_unpool.

Note [Pooling as two kernels]
Every pooling here is one of two kernels on the trailing ``n`` spatial dims (any leading dims):

* averages (avg_pool, adaptive_avg_pool, and interpolation in nn_resample.py) are separable
  linear maps: one small matrix per spatial dim (output positions x input positions; padding
  simply has no column), applied with one tensordot per dim (BLAS). The VJP is the same map with
  the transposed matrices, the JVP the map itself, and the map of the VJP is again linear, so
  every derivative order is one op (``SEPARABLE``).
* maxima (max_pool, adaptive_max_pool, fractional_max_pool) first find, vectorized over the
  window offsets (a loop over the kernel's few offsets, never over pixels), the flat index per
  plane of each window's maximum (torch's ``indices`` layout: ``h * W + w``); the op then is a
  gather at those indices. Its VJP scatters the gradient to them (``SCATTER_ADD``), whose VJP
  gathers again (``GATHER``): so gradgrad, JVP and batching rules all reduce to two ops.
  ``max_unpool`` is the scatter that assigns (``UNPOOL``), its VJP the gather.

The 1-d functions run the 2-d ones on an unsqueezed input, as torch does (their graph ends with
``SqueezeBackward1``).

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> x = ndgrad.arange(16.0).reshape(1, 1, 4, 4).requires_grad_()
    >>> y, i = F.max_pool2d(x, 2, return_indices=True)
    >>> i.flatten().tolist()
    [5, 7, 13, 15]
    >>> y.grad_fn.name()
    'MaxPool2DWithIndicesBackward0'
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np

from .. import _dtype
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall
from ._dispatch import Op, apply
from ._second_order import tie, tied
from ._channels_last import keep as _keep_cl
from ._util import category

_INT = _dtype._INT
_f32 = np.dtype(np.float32)
_TILE_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int64, np.int32,
                                           np.int16, np.int8, np.uint8))


def _bad_dtype(name: str, x: np.ndarray) -> NotImplementedError:
    return NotImplementedError(f"\"{name}\" not implemented for "
                               f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")


# ---------------------------------------------------------------------------- separable maps
def _compute_dtype(x: np.ndarray) -> np.dtype:
    if x.dtype.kind == "f" and x.dtype.itemsize >= 4:
        return x.dtype
    if x.dtype.kind in "iub":
        return np.dtype(np.float64)
    return _f32                         # float16, bfloat16: accumulate in float32


def sep_forward(x: np.ndarray, mats: tuple) -> np.ndarray:
    """``x`` with matrix ``mats[j]`` (out x in, or None: identity) applied along its
    ``len(mats)`` trailing dims: one matmul per dim on a contiguous reshape (no transposes)."""
    if x.dtype.kind == "f" and x.size and not np.isfinite(x).all():
        return _sep_nonfinite(x, mats)
    return _sep_finite(x, mats)


def _sep_nonfinite(x: np.ndarray, mats: tuple) -> np.ndarray:
    """``sep_forward`` of an input holding NaN or infinities. A matmul would multiply them by
    the zero weights of every other window (NaN everywhere); a window (an output element)
    only sees the inputs it has a nonzero weight for, as torch's loops do: NaN if one is NaN
    or infinities of both signs meet, else the infinity, else the finite sum."""
    finite = np.isfinite(x)
    out = _sep_finite(np.where(finite, x, 0), mats)
    absm = tuple(None if a is None else np.abs(a) for a in mats)
    one = np.ones((), x.dtype)
    hit_nan = _sep_finite(np.where(np.isnan(x), one, 0), absm) > 0
    pinf = _sep_finite(np.where(x == np.inf, one, 0), mats)
    ninf = _sep_finite(np.where(x == -np.inf, one, 0), mats)
    up, down = (pinf > 0) | (ninf < 0), (pinf < 0) | (ninf > 0)
    out = np.where(up, np.inf, np.where(down, -np.inf, out))
    return np.where(hit_nan | (up & down), np.nan, out).astype(out.dtype, copy=False)


def _sep_finite(x: np.ndarray, mats: tuple) -> np.ndarray:
    n = len(mats)
    shape = list(x.shape)
    out_shape = tuple(shape[:len(shape) - n]) + tuple(
        shape[len(shape) - n + j] if a is None else a.shape[0] for j, a in enumerate(mats))
    if x.size == 0 or 0 in out_shape:
        return np.zeros(out_shape, x.dtype)
    ct = _compute_dtype(x)
    y = x if x.dtype == ct else x.astype(ct)
    for j in range(n - 1, -1, -1):
        a = mats[j]
        if a is None:
            continue
        ax = len(shape) - n + j
        a = a.astype(ct, copy=False)
        if j == n - 1:
            y = np.matmul(y.reshape(-1, shape[ax]), a.T)
        else:
            trail = int(np.prod(shape[ax + 1:], dtype=np.int64))
            y = np.matmul(a, y.reshape(-1, shape[ax], trail))
        shape[ax] = a.shape[0]
        y = y.reshape(shape)
    if x.dtype.kind in "iu":
        return np.trunc(y).astype(x.dtype)
    return y if y.dtype == x.dtype else y.astype(x.dtype)


def _transposed(mats: tuple) -> tuple:
    return tuple(None if a is None else a.T for a in mats)


def sep(t: Tensor, mats: tuple) -> Tensor:
    """The separable map as a differentiable op (the VJP of every averaging op)."""
    return apply(SEPARABLE, (t,), (t._data,), (mats,))


def _sep_vjp(ctx, g):
    return tie(sep(g, _transposed(ctx._args[-1])), ctx)     # Note [Input ties]


def _sep_jvp(ctx, t):
    return sep(t, ctx._args[-1])


def _sep_op(name: str, node: str, args: Sequence[str] = ()) -> Op:
    """An averaging op: the separable map, with torch's node name; ``mats`` is its last
    argument."""
    return Op(name, node, lambda x, *a: sep_forward(x, a[-1]), _sep_vjp,
              args=tuple(args) + ("mats",), jvp=_sep_jvp)


SEPARABLE = _sep_op("_separable_linear", "SeparableLinearBackward0")


# ---------------------------------------------------------------------------- gather / scatter
def _planes(idx: np.ndarray, lead: tuple, nsp: int) -> np.ndarray:
    """``idx`` (flat per-plane indices, shape ``lead' + out``) broadcast to ``lead`` and
    flattened to (planes, positions)."""
    out = idx.shape[idx.ndim - nsp:]
    if math.prod(out) == 0:                      # an empty output (adaptive size 0)
        return np.zeros((math.prod(lead), 0), idx.dtype)
    if idx.shape[:idx.ndim - nsp] == lead:      # no broadcast (np.broadcast_to: ~5 us)
        return idx.reshape(-1, math.prod(out))
    return np.broadcast_to(idx, lead + out).reshape(-1, math.prod(out))


def gather_forward(x: np.ndarray, idx: np.ndarray, nsp: int) -> np.ndarray:
    """``x``'s planes (trailing ``nsp`` dims) read at flat indices ``idx``."""
    lead = x.shape[:x.ndim - nsp]
    lead = np.broadcast_shapes(lead, idx.shape[:idx.ndim - nsp])
    xs = np.broadcast_to(x, lead + x.shape[x.ndim - nsp:]).reshape(
        int(np.prod(lead, dtype=np.int64)), -1)
    ii = _planes(idx, lead, nsp)
    if xs.shape[1] == 0:
        return np.zeros(lead + idx.shape[idx.ndim - nsp:], x.dtype)
    return np.take_along_axis(xs, ii, axis=1).reshape(lead + idx.shape[idx.ndim - nsp:])


def scatter_add_forward(g: np.ndarray, idx: np.ndarray, plane: tuple,
                        unique: bool = False) -> np.ndarray:
    """Zeros of shape ``lead + plane`` with ``g`` added at flat indices ``idx`` (``unique``:
    the indices of a plane are distinct, so writing them is enough)."""
    if unique:
        return unpool_forward(g, idx, plane)
    nsp = len(plane)
    lead = g.shape[:g.ndim - nsp]
    P = int(np.prod(plane, dtype=np.int64))
    L = int(np.prod(lead, dtype=np.int64))
    ii = _planes(idx, lead, nsp)
    flat = (np.arange(L, dtype=np.int64)[:, None] * P + ii).ravel()
    gv = g.reshape(-1)
    if gv.dtype.kind == "c":
        out = (np.bincount(flat, gv.real, L * P) + 1j * np.bincount(flat, gv.imag, L * P))
    else:
        out = np.bincount(flat, gv.astype(np.float64, copy=False), L * P)
    return out.astype(g.dtype).reshape(lead + tuple(plane))


def unpool_forward(x: np.ndarray, idx: np.ndarray, plane: tuple) -> np.ndarray:
    """Zeros of shape ``lead + plane`` with ``x`` written at flat indices ``idx``."""
    nsp = len(plane)
    lead = x.shape[:x.ndim - nsp]
    P = math.prod(plane)
    L = math.prod(lead)
    out = np.zeros((L, P), x.dtype)
    ii = _planes(idx, lead, nsp)
    # one flat fancy assignment (~2x put_along_axis)
    out.reshape(-1)[(np.arange(L, dtype=np.int64)[:, None] * P + ii).reshape(-1)] = \
        x.reshape(-1)
    return out.reshape(lead + tuple(plane))


def gather(t: Tensor, idx: Tensor, nsp: int) -> Tensor:
    return apply(GATHER, (t,), (t._data,), (nsp, idx))


def scatter_add(g: Tensor, idx: Tensor, plane: tuple, unique: bool = False) -> Tensor:
    return apply(SCATTER_ADD, (g,), (g._data,), (tuple(plane), idx, unique))


GATHER = Op("_pool_gather", "PoolGatherBackward0",
            lambda x, nsp, idx: gather_forward(x, idx._data, nsp),
            lambda ctx, g: scatter_add(g, ctx._args[1], ctx.input_shape(0)[-ctx._args[0]:]),
            args=("nsp", "indices"),
            jvp=lambda ctx, t: gather(t, ctx._args[1], ctx._args[0]))
SCATTER_ADD = Op("_pool_scatter_add", "PoolScatterAddBackward0",
                 lambda g, plane, idx, u: scatter_add_forward(g, idx._data, plane, u),
                 lambda ctx, g: gather(g, ctx._args[1], len(ctx._args[0])),
                 args=("plane", "indices", "unique"),
                 jvp=lambda ctx, t: scatter_add(t, ctx._args[1], ctx._args[0], ctx._args[2]))


def _max_vjp(ctx, g):
    nsp = ctx._args[0]
    unique = False
    if ctx._op in (MAX_POOL2D, MAX_POOL3D):     # windows that do not overlap
        kernel, st, dil = ctx._args[1], ctx._args[2], ctx._args[4]
        unique = all((k - 1) * d < s for k, d, s in zip(kernel, dil, st))
    plane = ctx.input_shape(0)[-nsp:]
    idx, ok = _in_plane(ctx._args[-1], plane)
    if ok is not None:                              # Note [Empty max-pool windows]
        g = g.masked_fill(~ok, 0.0)
        unique = False
    return tie(scatter_add(g, idx, plane, unique), ctx)     # Note [Input ties]


# The values found with the indices, handed to the op's forward so that it need not gather
# them again (set and consumed within one public call).
_found: Any = None


def _gather_or_found(x: np.ndarray, nsp: int, idx: np.ndarray) -> np.ndarray:
    global _found
    f = _found
    if f is not None:
        _found = None
        if f[0] is x and f[1] is idx:
            return f[2]
    P = math.prod(x.shape[x.ndim - nsp:])
    if idx.size and (idx.min() < 0 or idx.max() >= P):      # Note [Empty max-pool windows]
        ok = (idx >= 0) & (idx < P)
        return np.where(ok, gather_forward(x, np.where(ok, idx, 0), nsp), _lowest(x.dtype))
    return gather_forward(x, idx, nsp)


# Note [Empty max-pool windows]
# With padding and dilation a window can hold no input position at all (every tap in the
# padding): its maximum is the lowest value (-inf) and torch's index is that of its first tap
# moved into the input (the start plus whole dilations), which can lie outside the plane.
# ndgrad returns that index; the gradients (and the forward's gather) skip such windows
# instead of reading or writing outside the plane.
def _in_plane(idx: Tensor, plane: tuple) -> tuple:
    """(indices, None) when every index lies in the plane, else (the indices with the others
    at 0, a Tensor mask of the valid ones)."""
    a = idx._data
    P = math.prod(plane)
    if a.size == 0 or (a.min() >= 0 and a.max() < P):
        return idx, None
    ok = (a >= 0) & (a < P)
    return _wrap(np.where(ok, a, 0)), _wrap(ok)


def _max_jvp(ctx, t):
    nsp = ctx._args[0]
    idx, ok = _in_plane(ctx._args[-1], ctx.input_shape(0)[-nsp:])
    r = gather(t, idx, nsp)
    return r if ok is None else r.masked_fill(~ok, 0.0)


def _max_op(name: str, node: str, args: Sequence[str]) -> Op:
    """A max pooling op: the gather at precomputed window maxima (``indices``, saved, the last
    argument; ``nsp`` the first)."""
    return Op(name, node, lambda x, nsp, *a: _gather_or_found(x, nsp, a[-1]._data), _max_vjp,
              args=("nsp",) + tuple(args) + ("indices",), saves=("indices",), jvp=_max_jvp)


MAX_POOL2D = _max_op("max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0",
                     ("kernel_size", "stride", "padding", "dilation", "ceil_mode"))
MAX_POOL3D = _max_op("max_pool3d_with_indices", "MaxPool3DWithIndicesBackward0",
                     ("kernel_size", "stride", "padding", "dilation", "ceil_mode"))
ADAPTIVE_MAX2D = _max_op("adaptive_max_pool2d", "AdaptiveMaxPool2DBackward0", ("output_size",))
ADAPTIVE_MAX3D = _max_op("adaptive_max_pool3d", "AdaptiveMaxPool3DBackward0", ("output_size",))
FRACTIONAL2D = _max_op("fractional_max_pool2d", "FractionalMaxPool2DBackward0",
                       ("kernel_size", "output_size"))
FRACTIONAL3D = _max_op("fractional_max_pool3d", "FractionalMaxPool3DBackward0",
                       ("kernel_size", "output_size"))


def _unpool_vjp(ctx, g):
    plane, idx = ctx._args
    return gather(g, idx, len(plane))


def _unpool(x: Tensor, idx: Tensor, plane: tuple, op: Op) -> Tensor:
    return apply(op, (x,), (x._data,), (tuple(plane), idx))


MAX_UNPOOL2D: Op = Op("max_unpool2d", "MaxUnpool2DBackward0",
                  lambda x, plane, idx: unpool_forward(x, idx._data, plane), _unpool_vjp,
                  args=("output_size", "indices"), saves=("indices",),
                  jvp=lambda ctx, t: _unpool(t, ctx._args[1], ctx._args[0], MAX_UNPOOL2D))
MAX_UNPOOL3D: Op = Op("max_unpool3d", "MaxUnpool3DBackward0",
                  lambda x, plane, idx: unpool_forward(x, idx._data, plane), _unpool_vjp,
                  args=("output_size", "indices"), saves=("indices",),
                  jvp=lambda ctx, t: _unpool(t, ctx._args[1], ctx._args[0], MAX_UNPOOL3D))


# ---------------------------------------------------------------------------- window maxima
def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if dtype.kind in "fc" or dtype.name == "bfloat16" else np.iinfo(dtype).min


def _plane_strides(plane: tuple) -> list:
    return [int(np.prod(plane[j + 1:], dtype=np.int64)) for j in range(len(plane))]


def _argmax_windows(x: np.ndarray, plane: tuple, out: tuple, offsets: list, first: list,
                    read: Any) -> np.ndarray:
    """Flat per-plane index of each window's maximum (torch's rule: the first maximum in scan
    order, a NaN wins over numbers and over an earlier NaN).

    ``offsets[j]``: per window offset ``k`` along dim ``j``, ``(coords, valid)``: the input
    coordinates read (broadcastable to the output's shape) and where they lie inside the input
    (None: everywhere). ``first[j]``: coordinate of each window's first valid position.
    ``read(ks)``: the values at offsets ``ks`` (shape ``lead + out``).
    """
    nsp = len(plane)
    ps = _plane_strides(plane)
    lead = x.shape[:x.ndim - nsp]
    best = np.full(lead + out, _lowest(x.dtype), x.dtype)
    bidx = np.zeros(lead + out, np.int64)
    bidx[...] = sum(f * s for f, s in zip(first, ps))
    is_float = x.dtype.kind == "f" or x.dtype.name == "bfloat16"
    for ks in itertools.product(*(range(len(o)) for o in offsets)):
        v = read(ks)
        m = v > best
        if is_float:
            m |= np.isnan(v)
        valid = None
        flat = 0
        for j, k in enumerate(ks):
            c, ok = offsets[j][k]
            flat = flat + c * ps[j]
            if ok is not None:
                valid = ok if valid is None else valid & ok
        if valid is not None:
            m &= valid
        np.copyto(best, v, where=m)
        np.copyto(bidx, np.broadcast_to(flat, bidx.shape), where=m)
    return bidx


def _axis_shape(j: int, nsp: int, n: int) -> tuple:
    return (1,) * j + (n,) + (1,) * (nsp - j - 1)


# Note [Max pooling on 2x2 tiles]
# The most common max pooling (2x2 windows, stride 2, no padding or dilation: LeNet, VGG)
# tiles the plane. Its four window offsets are first copied out of the input into one
# contiguous (4, ..., Ho, Wo) array (four strided copies), so the comparisons run on
# contiguous data; then a tournament in scan order: the two pairs of each row ((0,0) against
# (0,1), (1,0) against (1,1)), the right one winning only if strictly greater, then the lower
# row only if strictly greater than the upper's winner. That is torch's first maximum in scan
# order (a later value wins only if strictly greater), and the flat index is
# ``2 * W * ho + 2 * wo + W * lower + right``: ~45% less time than one pass per offset with a
# running offset number (the general path below). A NaN anywhere in the maxima sends the call
# to the general path (torch's NaN order); a plane of odd size ignores its last row or column,
# as the floor output size does.
def _tiles2x2(x: np.ndarray, out: tuple) -> Any:
    """(indices, maxima) of 2x2 windows at stride 2 (Note [Max pooling on 2x2 tiles]), or
    None when a maximum is NaN."""
    lead = x.shape[:-2]
    ho, wo = out
    w = x.shape[-1]
    xv = x[..., :2 * ho, :2 * wo].reshape(lead + (ho, 2, wo, 2))
    q = np.empty_like(x, order="C", shape=(4,) + lead + (ho, wo))     # (Note [Meta arrays])
    for k in range(4):
        q[k] = xv[..., k >> 1, :, k & 1]
    a, b, c, d = q
    best = np.maximum(a, b)
    right = b > a
    low = np.maximum(c, d)
    right_low = d > c
    lower = low > best
    np.maximum(best, low, out=best)
    if x.dtype.kind == "f" and np.isnan(best).any():
        return None
    # the right column of the winning row: right_low where lower, else right
    np.bitwise_xor(right, right_low, out=right_low)
    right_low &= lower
    right ^= right_low
    idx = np.multiply(lower, np.int64(w), dtype=np.int64)
    idx += right
    idx += (np.arange(ho, dtype=np.int64) * (2 * w))[:, None] + np.arange(0, 2 * wo, 2,
                                                                          dtype=np.int64)
    return idx, best


def max_pool_indices(x: np.ndarray, kernel: tuple, stride: tuple, pad: tuple, dil: tuple,
                     out: tuple) -> np.ndarray:
    """Indices of regular (strided, padded, dilated) windows' maxima, via strided slices."""
    global _found
    nsp = len(kernel)
    plane = x.shape[x.ndim - nsp:]
    if (kernel == (2, 2) and stride == (2, 2) and pad == (0, 0) and dil == (1, 1)
            and x.dtype in _TILE_DTYPES and all(2 * o <= n for o, n in zip(out, plane))
            and x.size):
        r = _tiles2x2(x, out)
        if r is not None:       # Note [Max pooling on 2x2 tiles]
            _found = (x, r[0], r[1])
            return r[0]
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, stride, kernel, dil)]
    right = [max(0, nd - p - n) for nd, p, n in zip(need, pad, plane)]
    if any(pad) or any(right):
        # padding never wins: it holds the lowest value and is masked below
        xp = np.full(x.shape[:x.ndim - nsp] + tuple(p + n + r for p, n, r in
                                                    zip(pad, plane, right)),
                     _lowest(x.dtype), x.dtype)
        xp[(Ellipsis,) + tuple(slice(p, p + n) for p, n in zip(pad, plane))] = x
    else:
        xp = x
    offsets, first = [], []
    for j in range(nsp):
        starts = np.arange(out[j], dtype=np.int64) * stride[j] - pad[j]
        lst = []
        for k in range(kernel[j]):
            c = starts + k * dil[j]
            ok = (c >= 0) & (c < plane[j])
            lst.append((c.reshape(_axis_shape(j, nsp, out[j])),
                        None if ok.all() else ok.reshape(_axis_shape(j, nsp, out[j]))))
        offsets.append(lst)
        neg = np.maximum(-starts, 0)
        first.append((starts + -(-neg // dil[j]) * dil[j]).reshape(_axis_shape(j, nsp, out[j])))

    def read(ks):
        sl = tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                   for k, d, o, s in zip(ks, dil, out, stride))
        return xp[(Ellipsis,) + sl]
    all_ks = list(itertools.product(*(range(k) for k in kernel)))
    ps = _plane_strides(plane)
    ct = np.int16 if len(all_ks) < 2 ** 15 else np.int64
    if all(ok is None for lst in offsets for _, ok in lst):
        # Every window lies inside the input: one pass per offset keeps the running maximum
        # and the number of the first offset that reached it (a later offset wins only if
        # strictly greater). A NaN never wins a comparison but propagates into the maximum:
        # then torch's NaN order is found by _argmax_windows.
        best = read(all_ks[0]).copy()
        code = np.zeros(best.shape, ct)
        for n_k in range(1, len(all_ks)):
            v = read(all_ks[n_k])
            m = v > best
            np.maximum(best, v, out=best)
            code += m.astype(ct) * (ct(n_k) - code)
        if (x.dtype.kind == "f" or x.dtype.name == "bfloat16") and np.isnan(best).any():
            return _argmax_windows(x, plane, out, offsets, first, read)
        shift = np.array([sum(k * d * p for k, d, p in zip(ks, dil, ps)) for ks in all_ks],
                         np.int64)
        base = sum((np.arange(o, dtype=np.int64) * s - p).reshape(_axis_shape(j, nsp, o)) * q
                   for j, (o, s, p, q) in enumerate(zip(out, stride, pad, ps)))
        idx = np.take(shift, code) + base
        _found = (x, idx, best)
        return idx
    # the maxima first (NaN propagates), then the first offset in scan order holding each
    best = read(all_ks[0]).copy()
    for ks in all_ks[1:]:
        np.maximum(best, read(ks), out=best)
    if (x.dtype.kind == "f" or x.dtype.name == "bfloat16") and np.isnan(best).any():
        return _argmax_windows(x, plane, out, offsets, first, read)   # torch's NaN order
    # per window: the number of the winning offset, then start + that offset's flat shift
    # (branch-free: a select with a random mask, np.where, costs ~10x a product here)
    code = np.zeros(best.shape, ct)
    found = None
    shift = np.empty(len(all_ks), np.int64)
    for n_k, ks in enumerate(all_ks):
        m = read(ks) == best
        valid = None
        for j, k in enumerate(ks):
            ok = offsets[j][k][1]
            if ok is not None:
                valid = ok if valid is None else valid & ok
        if valid is not None:
            m &= valid
        if found is None:
            found = m
        else:
            m &= ~found                     # the first maximum in scan order wins
            code += m.astype(ct) * ct(n_k)
            found |= m
        shift[n_k] = sum(k * d * p for k, d, p in zip(ks, dil, ps))
    base = sum((np.arange(o, dtype=np.int64) * s - p).reshape(_axis_shape(j, nsp, o)) * q
               for j, (o, s, p, q) in enumerate(zip(out, stride, pad, ps)))
    idx = np.take(shift, code) + base
    if found is not None and not found.all():       # Note [Empty max-pool windows]
        idx = np.where(found, idx, sum(f * q for f, q in zip(first, ps)))
    _found = (x, idx, best)
    return idx


def _adaptive_bounds(n: int, o: int) -> tuple:
    i = np.arange(o, dtype=np.int64)
    start = (i * n) // o
    end = -((-(i + 1) * n) // o)
    return start, end


def adaptive_max_indices(x: np.ndarray, out: tuple) -> np.ndarray:
    nsp = len(out)
    plane = x.shape[x.ndim - nsp:]
    offsets, first, takes = [], [], []
    for j in range(nsp):
        start, end = _adaptive_bounds(plane[j], out[j])
        L = int((end - start).max()) if out[j] else 0
        lst, tk = [], []
        for k in range(L):
            c = start + k
            ok = c < end
            cc = np.minimum(c, plane[j] - 1)
            lst.append((cc.reshape(_axis_shape(j, nsp, out[j])),
                        None if ok.all() else ok.reshape(_axis_shape(j, nsp, out[j]))))
            tk.append(cc)
        offsets.append(lst)
        takes.append(tk)
        first.append(start.reshape(_axis_shape(j, nsp, out[j])))

    def read(ks):
        v = x
        for j, k in enumerate(ks):
            v = np.take(v, takes[j][k], axis=x.ndim - nsp + j)
        return v
    return _argmax_windows(x, plane, out, offsets, first, read)


def fractional_intervals(sample: np.ndarray, n: int, o: int, k: int) -> np.ndarray:
    """Window starts along one dim from uniform samples ``u`` (shape ``lead``): for ``i < o-1``
    ``int((i + u) * a) - int(u * a)`` with ``a = (n - k) / (o - 1)``; the last is ``n - k``."""
    lead = sample.shape
    res = np.empty(lead + (o,), np.int64)
    if o > 1:
        a = (n - k) / (o - 1)
        i = np.arange(o - 1)
        u = sample[..., None].astype(np.float64)
        res[..., :-1] = (np.trunc((i + u) * a) - np.trunc(u * a)).astype(np.int64)
    res[..., -1] = n - k
    return res


def fractional_indices(x: np.ndarray, kernel: tuple, out: tuple,
                       samples: np.ndarray) -> np.ndarray:
    """Indices of fractional max pooling windows; ``samples`` (N, C, nsp) holds, per plane,
    the uniform samples of the dims as torch reads ``_random_samples``: (W, H) in 2-d,
    (T, H, W) in 3-d."""
    nsp = len(kernel)
    plane = x.shape[x.ndim - nsp:]
    lead = x.shape[:x.ndim - nsp]
    smp = samples.reshape(lead + (nsp,)) if samples.size else np.zeros(lead + (nsp,))
    offsets, first, coords = [], [], []
    for j in range(nsp):
        st = fractional_intervals(smp[..., nsp - 1 - j if nsp == 2 else j], plane[j], out[j],
                                  kernel[j])
        shp = lead + _axis_shape(j, nsp, out[j])
        lst, cs = [], []
        for k in range(kernel[j]):
            c = (st + k).reshape(shp)
            lst.append((c, None))
            cs.append(c)
        offsets.append(lst)
        coords.append(cs)
        first.append(st.reshape(shp))

    def read(ks):
        v = x
        for j, k in enumerate(ks):
            v = np.take_along_axis(v, coords[j][k], axis=x.ndim - nsp + j)
        return v
    return _argmax_windows(x, plane, out, offsets, first, read)


# ---------------------------------------------------------------------------- arguments
def _ints(v: Any, n: int, fn: str, what: str, allow_none: bool = False) -> Any:
    if v is None and allow_none:
        return None
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),) * n
    if isinstance(v, (tuple, list)) and all(isinstance(e, (int, np.integer)) for e in v):
        if len(v) == 1:
            return (int(v[0]),) * n
        if len(v) == n:
            return tuple(int(e) for e in v)
    if isinstance(v, (tuple, list)) and len(v) == 0 and what == "stride":
        return None
    word = {1: "one int", 2: "a tuple of two ints", 3: "a tuple of three ints"}[n]
    raise RuntimeError(f"{fn}: {what} must either be a single int, or {word}")


def _size_str(s: Sequence[int]) -> str:
    return "x".join(str(int(v)) for v in s)


def _pool_out(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = num // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _check_pool(x: np.ndarray, nsp: int, kernel: tuple, stride: tuple, pad: tuple,
                dil: tuple, ceil: bool, fn: str, is_max: bool) -> tuple:
    """torch's checks of a pooling's arguments (in its order); the output's spatial shape.
    First, dim by dim, those of the output size's formula (zero stride, padding against the
    dilated kernel), then the arguments' signs, the input's shape, the padding against the
    kernel itself and the output size."""
    for k, s, p, d in zip(kernel, stride, pad, dil):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        eff = (k - 1) * d + 1
        if p > (eff // 2 if eff >= 0 else -(-eff // 2)):     # C's division (to zero)
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    if any(k <= 0 for k in kernel):
        raise RuntimeError("kernel size should be greater than zero, but got " +
                           " ".join(f"k{a}: {k}" for a, k in zip("THW"[3 - nsp:], kernel)))
    if any(s < 0 for s in stride):
        raise RuntimeError("stride should be greater than zero, but got " +
                           " ".join(f"d{a}: {s}" for a, s in zip("THW"[3 - nsp:], stride)))
    if any(d <= 0 for d in dil):
        raise RuntimeError("dilation should be greater than zero, but got " +
                           " ".join(f"dilation{a}: {d}" for a, d in zip("THW"[3 - nsp:], dil)))
    nd = x.ndim
    avg2d = nsp == 2 and not is_max
    if nd not in (nsp + 1, nsp + 2):
        if avg2d and nd < 3:            # PyTorch reads the channels (dim -3) first
            n = max(nd, 1)
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got -3)")
        if avg2d:
            raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim "
                               f"batch size for input, but got:{list(x.shape)}")
        raise RuntimeError(f"non-empty {nsp + 1}D or {nsp + 2}D (batch mode) tensor expected "
                           "for input")
    if any(v == 0 for v in x.shape[nd - nsp - 1:]) or (nd == nsp + 1 and x.shape[0] == 0):
        if is_max and nsp == 3:
            raise RuntimeError("Expected input's non-batch dimensions to have positive length,"
                               f" but input has a shape of {list(x.shape)}")
        if nsp == 3:
            lead = x.shape[nd - nsp - 1:]
            raise RuntimeError(f"{fn}(): Expected input's non-batch dimensions to have positive "
                               f"length, but input has a shape of {list(x.shape)} and non-batch "
                               f"dimension {lead.index(0)} has length zero!")
        if is_max or avg2d:
            raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim "
                               f"batch size for input, but got:{list(x.shape)}")
        raise RuntimeError(f"non-empty {nsp + 1}D or {nsp + 2}D (batch mode) tensor expected "
                           "for input")
    plane = x.shape[nd - nsp:]
    # torch's shape checks: a 3-d average needs the (unpadded) input to hold the kernel, and
    # the padding may be at most half the kernel itself (not the dilated one)
    if nsp == 3 and not is_max and any(n < k for n, k in zip(plane, kernel)):
        raise RuntimeError(f"input image (T: {plane[0]} H: {plane[1]} W: {plane[2]}) smaller "
                           f"than kernel size (kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]})")
    if any(2 * p > k for k, p in zip(kernel, pad)):
        if nsp == 2:
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but "
                               f"got padW = {pad[1]}, padH = {pad[0]}, kW = {kernel[1]}, "
                               f"kH = {kernel[0]}")
        if nsp == 3:
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but "
                               f"got kT: {kernel[0]} kW: {kernel[2]} kH: {kernel[1]} padT: "
                               f"{pad[0]} padW: {pad[2]} padH: {pad[1]}")
    out = tuple(_pool_out(n, k, s, p, d, ceil)
                for n, k, s, p, d in zip(plane, kernel, stride, pad, dil))
    if any(o < 1 for o in out):
        c = x.shape[nd - nsp - 1]
        raise RuntimeError(f"Given input size: ({_size_str((c,) + plane)}). Calculated output "
                           f"size: ({_size_str((c,) + out)}). Output size is too small")
    return out


def _float_or_int(x: np.ndarray, name: str, allow_int: bool) -> None:
    if x.dtype == np.bool_ or (category(x) <= _INT and not allow_int) or x.dtype.kind == "c":
        raise _bad_dtype(name, x)


# ---------------------------------------------------------------------------- max_pool
# Note [Max pooling in the op table]
# Max pooling is two op-table ops: the (non-differentiable) indices of the windows' maxima,
# ``_max_pool_indices`` / ``_adaptive_max_pool_indices``, and the differentiable gather at
# them (``max_pool2d_with_indices`` ...; its VJP scatters with ndgrad ops, so it differentiates
# to any order). A trace (ndgrad.jit) therefore records both as ops, not the whole function as
# an opaque Call. The values found with the indices are handed to the gather (``_found``).
MAX_POOL_INDICES = Op("_max_pool_indices", "MaxPoolIndicesBackward0",
                      lambda x, kernel, st, pad, dil, out: max_pool_indices(x, kernel, st, pad,
                                                                            dil, out),
                      args=("kernel_size", "stride", "padding", "dilation", "output_size"),
                      jvp=lambda ctx, t: None)     # integer indices: no tangent
ADAPTIVE_MAX_INDICES = Op("_adaptive_max_pool_indices", "AdaptiveMaxPoolIndicesBackward0",
                          lambda x, out: adaptive_max_indices(x, out), args=("output_size",),
                          jvp=lambda ctx, t: None)


def _max_pool(input: Tensor, nsp: int, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    fn = f"max_pool{nsp}d"
    x = input._data
    kernel = _ints(kernel_size, nsp, fn, "kernel_size")
    st = _ints(stride, nsp, fn, "stride", allow_none=True)
    st = kernel if st is None else st
    pad = _ints(padding, nsp, fn, "padding")
    dil = _ints(dilation, nsp, fn, "dilation")
    out = _check_pool(x, nsp, kernel, st, pad, dil, bool(ceil_mode), fn, True)
    _float_or_int(x, fn, True)
    idx = apply(MAX_POOL_INDICES, (input,), (x,), (kernel, st, pad, dil, out))
    op = MAX_POOL2D if nsp == 2 else MAX_POOL3D
    y = apply(op, (input,), (x,), (nsp, kernel, st, pad, dil, bool(ceil_mode), idx))
    return (y, idx) if return_indices else y


def _unsq(t: Tensor) -> Tensor:
    return t.unsqueeze(-2)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    """``max_pool1d(..., return_indices=True)``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of the last dim of a (C, L) or (N, C, L) input.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.max_pool1d(ndgrad.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
    tensor([[3., 2.]])
    """
    if input._blevel:
        r = _bcall(max_pool1d, input, kernel_size, stride, padding, dilation, ceil_mode,
                   return_indices)
        if r is not NotImplemented:
            return r
    x = input._data
    k = _ints(kernel_size, 1, "max_pool1d", "kernel_size")
    st = _ints(stride, 1, "max_pool1d", "stride", allow_none=True) or k
    pad = _ints(padding, 1, "max_pool1d", "padding")
    dil = _ints(dilation, 1, "max_pool1d", "dilation")
    if return_indices:
        # torch's indices path is max_pool2d's on (..., 1, L): its checks and messages
        if x.ndim not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional "
                               "tensor for argument #1 'self' (while checking arguments for "
                               "max_pool1d)")
        r = _max_pool(_unsq(input), 2, (1, k[0]), (1, st[0]), (0, pad[0]), (1, dil[0]),
                      ceil_mode, True)
        return r[0].squeeze(-2), _wrap(r[1]._data.squeeze(-2))
    if x.ndim not in (2, 3) or any(v == 0 for v in x.shape[x.ndim - 2:]):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{list(x.shape)}")
    if return_indices:
        # torch runs it as a 2-d max pooling of height 1, with that one's checks and words
        r = _max_pool(_unsq(input), 2, (1, k[0]), (1, st[0]), (0, pad[0]), (1, dil[0]),
                      ceil_mode, True)
        return r[0].squeeze(-2), _wrap(r[1]._data.squeeze(-2))
    if k[0] <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k[0]}")
    if st[0] <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {st[0]}")
    if pad[0] < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {pad[0]}")
    if pad[0] > k[0] // 2:       # the kernel's own size (torch's value path ignores dilation)
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but "
                           f"got padding={pad[0]} and kernel_size={k[0]}")
    if dil[0] <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {dil[0]}")
    if category(x) <= _INT:
        raise _bad_dtype("max_pool1d_impl", x)      # torch's value path: floating types only
    o = _pool_out(x.shape[-1], k[0], st[0], pad[0], dil[0], bool(ceil_mode))
    if o < 1:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {o}")
    r = _max_pool(_unsq(input), 2, (1, k[0]), (1, st[0]), (0, pad[0]), (1, dil[0]),
                  ceil_mode, True)
    y, i = r[0].squeeze(-2), _wrap(r[1]._data.squeeze(-2))
    return (y, i) if return_indices else y


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of the last two dims of a (C, H, W) or (N, C, H, W) input;
    with ``return_indices``, also each maximum's flat index ``h * W + w`` in its plane.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.max_pool2d(ndgrad.arange(16.0).reshape(1, 4, 4), 2)
    tensor([[[ 5.,  7.],
             [13., 15.]]])
    """
    if input._blevel:
        r = _bcall(max_pool2d, input, kernel_size, stride, padding, dilation, ceil_mode,
                   return_indices)
        if r is not NotImplemented:
            return r
    return _keep_cl(_max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                              return_indices), input)      # Note [Channels-last results]


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    """``max_pool2d(..., return_indices=True)``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of the last three dims of a (C, D, H, W) or (N, C, D, H, W)
    input (indices: ``(d * H + h) * W + w``).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.max_pool3d(ndgrad.arange(8.0).reshape(1, 2, 2, 2), 2).flatten()
    tensor([7.])
    """
    if input._blevel:
        r = _bcall(max_pool3d, input, kernel_size, stride, padding, dilation, ceil_mode,
                   return_indices)
        if r is not NotImplemented:
            return r
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    """``max_pool3d(..., return_indices=True)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---------------------------------------------------------------------------- avg_pool
def avg_pool_matrix(n: int, k: int, s: int, p: int, o: int, count_include_pad: bool,
                    divisor: Any) -> np.ndarray:
    """(o x n) averaging matrix along one dim (the divisor: torch's per-dim window extent,
    the product over dims being the window's count)."""
    a = np.zeros((o, n))
    start = np.arange(o) * s - p
    end = np.minimum(start + k, n + p)
    size = end - start
    cs, ce = np.maximum(start, 0), np.minimum(end, n)
    cols = np.arange(n)
    inside = (cols[None, :] >= cs[:, None]) & (cols[None, :] < ce[:, None])
    if divisor is not None:
        d = np.full(o, float(divisor))
    elif count_include_pad:
        d = size.astype(np.float64)
    else:
        d = np.maximum(ce - cs, 1).astype(np.float64)
    a[inside] = 1.0
    return a / d[:, None]


def _avg_op(nsp: int) -> Op:
    return _sep_op(f"avg_pool{nsp}d", f"AvgPool{nsp}DBackward0",
                   ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                    "divisor_override"))


AVG_POOL2D = _avg_op(2)
AVG_POOL3D = _avg_op(3)


def _avg_pool(input: Tensor, nsp: int, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool, count_include_pad: bool, divisor_override: Any,
              fn: str) -> Tensor:
    x = input._data
    kernel = _ints(kernel_size, nsp, fn, "kernel_size")
    st = _ints(stride, nsp, fn, "stride", allow_none=True)
    st = kernel if st is None else st
    pad = _ints(padding, nsp, fn, "padding")
    out = _check_pool(x, nsp, kernel, st, pad, (1,) * nsp, bool(ceil_mode), fn, False)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _float_or_int(x, fn, True)
    if category(x) <= _INT and x.dtype != np.int64:     # torch's kernels: int64 only
        raise _bad_dtype("avg_pool2d" if nsp == 2 else "avg_pool3d_out_frame", x)
    plane = x.shape[x.ndim - nsp:]
    mats = []
    for j in range(nsp):
        dv = None
        if divisor_override is not None:
            dv = divisor_override if j == 0 else 1
        mats.append(avg_pool_matrix(plane[j], kernel[j], st[j], pad[j], out[j],
                                    bool(count_include_pad), dv))
    op = AVG_POOL2D if nsp == 2 else AVG_POOL3D
    return apply(op, (input,), (x,), (kernel, st, pad, bool(ceil_mode), bool(count_include_pad),
                                      divisor_override, tuple(mats)))


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of the last dim of a (C, L) or (N, C, L) input.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.avg_pool1d(ndgrad.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
    tensor([[2., 1.]])
    """
    if input._blevel:
        r = _bcall(avg_pool1d, input, kernel_size, stride, padding, ceil_mode,
                   count_include_pad)
        if r is not NotImplemented:
            return r
    x = input._data
    if x.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for avg_pool1d)")
    for what, v in (("kernel_size", kernel_size), ("stride", stride), ("padding", padding)):
        if isinstance(v, (tuple, list)) and len(v) != 1 and (v or what != "stride"):
            raise RuntimeError(f"avg_pool1d() argument '{what}' should contain one int (got "
                               f"{len(v)})")
    k = _ints(kernel_size, 1, "avg_pool1d", "kernel_size")
    st = _ints(stride, 1, "avg_pool1d", "stride", allow_none=True) or k
    pad = _ints(padding, 1, "avg_pool1d", "padding")
    y = _avg_pool(_unsq(input), 2, (1, k[0]), (1, st[0]), (0, pad[0]), ceil_mode,
                  count_include_pad, None, "avg_pool2d")
    return y.squeeze(-2)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Any = None) -> Tensor:
    """Mean over sliding windows of the last two dims of a (C, H, W) or (N, C, H, W) input.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.avg_pool2d(ndgrad.arange(16.0).reshape(1, 4, 4), 2)
    tensor([[[ 2.5000,  4.5000],
             [10.5000, 12.5000]]])
    """
    if input._blevel:
        r = _bcall(avg_pool2d, input, kernel_size, stride, padding, ceil_mode,
                   count_include_pad, divisor_override)
        if r is not NotImplemented:
            return r
    return _keep_cl(_avg_pool(input, 2, kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override, "avg_pool2d"), input)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Any = None) -> Tensor:
    """Mean over sliding windows of the last three dims of a 4-d or 5-d input.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.avg_pool3d(ndgrad.arange(8.0).reshape(1, 2, 2, 2), 2).flatten()
    tensor([3.5000])
    """
    if input._blevel:
        r = _bcall(avg_pool3d, input, kernel_size, stride, padding, ceil_mode,
                   count_include_pad, divisor_override)
        if r is not NotImplemented:
            return r
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "avg_pool3d")


# ---------------------------------------------------------------------------- adaptive
def adaptive_matrix(n: int, o: int) -> np.ndarray:
    """(o x n) matrix of adaptive average pooling along one dim: window ``i`` covers
    ``[floor(i n / o), ceil((i + 1) n / o))``."""
    start, end = _adaptive_bounds(n, o)
    cols = np.arange(n)
    inside = (cols[None, :] >= start[:, None]) & (cols[None, :] < end[:, None])
    return inside / np.maximum(end - start, 1)[:, None].astype(np.float64)


ADAPTIVE_AVG2D = _sep_op("adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0")
ADAPTIVE_AVG3D = _sep_op("adaptive_avg_pool3d", "AdaptiveAvgPool3DBackward0")


def _adaptive_size(output_size: Any, nsp: int, x: np.ndarray, fn: str, is_max: bool) -> tuple:
    if isinstance(output_size, Tensor):
        output_size = output_size.tolist()
    if isinstance(output_size, (int, np.integer)):
        out = (int(output_size),) * nsp
    else:
        out = tuple(output_size)
        if len(out) != nsp:
            if nsp == 1:
                raise RuntimeError(f"{fn}(): argument 'output_size' should contain one int "
                                   f"(got {len(out)})")
            if is_max:
                raise RuntimeError(f"{fn}(): internal error: output_size.size() must be {nsp}")
            raise RuntimeError(f"{fn}: output_size must be {nsp}")
    plane = x.shape[x.ndim - nsp:]
    return tuple(plane[j] if out[j] is None else int(out[j]) for j in range(nsp))


def _check_adaptive(x: np.ndarray, nsp: int, out: tuple, fn: str, is_max: bool) -> None:
    if any(o < 0 for o in out):
        if is_max:
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: "
                               f"{list(x.shape[:x.ndim - nsp]) + list(out)}")
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, out))}}}")
    if x.ndim not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{fn}(): Expected {nsp + 1}D or {nsp + 2}D tensor, but got"
                           f"{':' if is_max else ''} {list(x.shape)}")   # PyTorch's colon
    # torch's 2-d average (and so 1-d) checks only the spatial dims: zero channels pass
    first = x.ndim - 2 if (nsp == 2 and not is_max) else 1
    for d in range(first, x.ndim):
        if x.shape[d] == 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(x.shape)} with dimension "
                               f"{d} being empty")


def _adaptive_avg(input: Tensor, nsp: int, output_size: Any) -> Tensor:
    fn = f"adaptive_avg_pool{nsp}d"
    x = input._data
    out = _adaptive_size(output_size, nsp, x, fn, False)
    _check_adaptive(x, nsp, out, fn, False)
    if category(x) <= _INT or x.dtype.kind == "c":
        raise _bad_dtype(fn + ("_cpu" if nsp == 3 else ""), x)     # torch's kernel name
    plane = x.shape[x.ndim - nsp:]
    mats = tuple(adaptive_matrix(n, o) for n, o in zip(plane, out))
    return apply(ADAPTIVE_AVG2D if nsp == 2 else ADAPTIVE_AVG3D, (input,), (x,), (mats,))


def _check_1d(x: np.ndarray, fn: str) -> None:
    if x.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor "
                           f"for argument #1 'self' (while checking arguments for {fn})")


def _one_int(output_size: Any, fn: str) -> tuple:
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != 1:
            raise RuntimeError(f"{fn}(): argument 'output_size' should contain one int "
                               f"(got {len(output_size)})")
        return (1, output_size[0])
    return (1, output_size)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over ``output_size`` adaptive windows of the last dim.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.adaptive_avg_pool1d(ndgrad.tensor([[1.0, 3.0, 2.0]]), 2)
    tensor([[2.0000, 2.5000]])
    """
    if input._blevel:
        r = _bcall(adaptive_avg_pool1d, input, output_size)
        if r is not NotImplemented:
            return r
    size = _one_int(output_size, "adaptive_avg_pool1d")
    _check_1d(input._data, "adaptive_avg_pool1d")
    if size[1] is not None and size[1] < 0:
        raise RuntimeError("adaptive_avg_pool2d: elements of output_size must be greater than "
                           f"or equal to 0 but received {{1, {size[1]}}}")
    return _adaptive_avg(_unsq(input), 2, size).squeeze(-2)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over adaptive windows giving an ``output_size`` (int or (H, W), None keeps a
    size) plane.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.adaptive_avg_pool2d(ndgrad.arange(16.0).reshape(1, 4, 4), 1)
    tensor([[[7.5000]]])
    """
    if input._blevel:
        r = _bcall(adaptive_avg_pool2d, input, output_size)
        if r is not NotImplemented:
            return r
    _check_min_dim(input, output_size)
    return _keep_cl(_adaptive_avg(input, 2, output_size), input)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over adaptive windows giving an ``output_size`` (D, H, W) volume.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.adaptive_avg_pool3d(ndgrad.arange(8.0).reshape(1, 2, 2, 2), 1).flatten()
    tensor([3.5000])
    """
    if input._blevel:
        r = _bcall(adaptive_avg_pool3d, input, output_size)
        if r is not NotImplemented:
            return r
    _check_min_dim(input, output_size)
    return _adaptive_avg(input, 3, output_size)


def _check_min_dim(input: Tensor, output_size: Any) -> None:
    # torch's Python wrapper fills the Nones of a list output_size from the input's sizes
    if isinstance(output_size, (list, tuple)) and input._data.ndim <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")


def _adaptive_max(input: Tensor, nsp: int, output_size: Any, return_indices: bool,
                  fn: str) -> Any:
    x = input._data
    out = _adaptive_size(output_size, nsp, x, fn, True)
    _check_adaptive(x, nsp, out, fn, True)
    _float_or_int(x, fn, False)
    idx = apply(ADAPTIVE_MAX_INDICES, (input,), (x,), (out,))
    op = ADAPTIVE_MAX2D if nsp == 2 else ADAPTIVE_MAX3D
    y = apply(op, (input,), (x,), (nsp, out, idx))
    return (y, idx) if return_indices else y


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over ``output_size`` adaptive windows of the last dim.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.adaptive_max_pool1d(ndgrad.tensor([[1.0, 3.0, 2.0]]), 2)
    tensor([[3., 3.]])
    """
    if input._blevel:
        r = _bcall(adaptive_max_pool1d, input, output_size, return_indices)
        if r is not NotImplemented:
            return r
    size = _one_int(output_size, "adaptive_max_pool1d")
    _check_1d(input._data, "adaptive_max_pool1d")
    y, i = _adaptive_max(_unsq(input), 2, size, True, "adaptive_max_pool2d")
    y, i = y.squeeze(-2), _wrap(i._data.squeeze(-2))
    return (y, i) if return_indices else y


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over adaptive windows giving an ``output_size`` plane (indices as max_pool2d's).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.adaptive_max_pool2d(ndgrad.arange(16.0).reshape(1, 4, 4), 1)
    tensor([[[15.]]])
    """
    if input._blevel:
        r = _bcall(adaptive_max_pool2d, input, output_size, return_indices)
        if r is not NotImplemented:
            return r
    _check_min_dim(input, output_size)
    return _keep_cl(_adaptive_max(input, 2, output_size, return_indices,
                                  "adaptive_max_pool2d"), input)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over adaptive windows giving an ``output_size`` volume.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.adaptive_max_pool3d(ndgrad.arange(8.0).reshape(1, 2, 2, 2), 1).flatten()
    tensor([7.])
    """
    if input._blevel:
        r = _bcall(adaptive_max_pool3d, input, output_size, return_indices)
        if r is not NotImplemented:
            return r
    _check_min_dim(input, output_size)
    return _adaptive_max(input, 3, output_size, return_indices, "adaptive_max_pool3d")


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> Any:
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> Any:
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> Any:
    return adaptive_max_pool3d(input, output_size, True)


# ---------------------------------------------------------------------------- lp_pool
def _lp_pool(input: Tensor, nsp: int, norm_type: Any, kernel_size: Any, stride: Any,
             ceil_mode: bool) -> Tensor:
    k = _ints(kernel_size, nsp, f"lp_pool{nsp}d", "kernel_size")
    p = float(norm_type)
    pooled = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[nsp](
        input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # sign(s) * relu(|s|) keeps the (sub)gradient at 0 as torch's composition does
    s = pooled.sign() * pooled.abs().relu()
    return s.mul(int(np.prod(k))).pow(1.0 / p)


def lp_pool1d(input: Tensor, norm_type: Any, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling ``(sum x^p)^(1/p)`` over windows of the last dim.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.lp_pool1d(ndgrad.tensor([[3.0, 4.0]]), 2, 2)
    tensor([[5.]])
    """
    if isinstance(kernel_size, (tuple, list)):
        # torch's composition pools first (its errors), then multiplies by kernel_size
        # itself: a sequence is refused there
        avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
        raise TypeError("mul(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(kernel_size).__name__}")
    return _lp_pool(input, 1, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: Any, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over windows of the last two dims.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.lp_pool2d(ndgrad.ones(1, 2, 2), 1, 2)
    tensor([[[4.]]])
    """
    return _lp_pool(input, 2, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: Any, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over windows of the last three dims.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.lp_pool3d(ndgrad.ones(1, 2, 2, 2), 1, 2).flatten()
    tensor([8.])
    """
    return _lp_pool(input, 3, norm_type, kernel_size, stride, ceil_mode)


# ---------------------------------------------------------------------------- max_unpool
def _unpool_size(x: np.ndarray, nsp: int, kernel: tuple, stride: tuple, pad: tuple,
                 output_size: Any) -> tuple:
    plane = x.shape[x.ndim - nsp:]
    default = tuple((n - 1) * s + k - 2 * p for n, s, k, p in zip(plane, stride, kernel, pad))
    if output_size is None:
        return default
    if isinstance(output_size, Tensor):
        output_size = output_size.tolist()
    out = list(output_size)
    if len(out) == nsp + 2 or (len(out) == nsp + 1 and x.ndim == nsp + 1):
        out = out[len(out) - nsp:]
        output_size = output_size[len(output_size) - nsp:]
    if len(out) != nsp:
        raise ValueError(f"output_size should be a sequence containing {nsp} or {nsp + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for j in range(nsp):
        lo, hi = default[j] - stride[j], default[j] + stride[j]
        if not lo < out[j] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {j} must be between '
                             f"{lo} and {hi})")
    return tuple(int(v) for v in out)


def _max_unpool(input: Tensor, indices: Tensor, nsp: int, kernel_size: Any, stride: Any,
                padding: Any, output_size: Any, fn: str) -> Tensor:
    x = input._data
    kernel = _ints(kernel_size, nsp, fn, "kernel_size")
    st = _ints(stride, nsp, fn, "stride", allow_none=True) or kernel
    pad = _ints(padding, nsp, fn, "padding")
    plane = _unpool_size(x, nsp, kernel, st, pad, output_size)
    if not isinstance(indices, Tensor):
        raise TypeError(f"{fn}(): argument 'indices' (position 2) must be Tensor, not "
                        f"{type(indices).__name__}")
    idx = indices._data
    if idx.dtype != np.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{_dtype._FROM_NP[idx.dtype]._torch_name}")
    if idx.shape != x.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(x.shape)}) but got indices tensor with shape: "
                           f"{list(idx.shape)}")
    if x.ndim not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"Input to max_unpooling{nsp}d should be a {nsp + 1}d or {nsp + 2}d "
                           f"Tensor, but got a tensor with {x.ndim} dimensions.")
    P = int(np.prod(plane))
    if idx.size and (idx.min() < 0 or idx.max() >= P):
        bad = int(idx.max() if idx.max() >= P else idx.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{_size_str(plane)})")
    op = MAX_UNPOOL2D if nsp == 2 else MAX_UNPOOL3D
    return apply(op, (input,), (x,), (tuple(plane), indices))


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool1d: ``input`` written at ``indices`` of a zero signal.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> y, i = F.max_pool1d(ndgrad.tensor([[1.0, 3.0, 2.0, 0.0]]), 2, return_indices=True)
    >>> F.max_unpool1d(y, i, 2)
    tensor([[0., 3., 2., 0.]])
    """
    if input._blevel or getattr(indices, "_blevel", 0):
        r = _bcall(max_unpool1d, input, indices, kernel_size, stride, padding, output_size)
        if r is not NotImplemented:
            return r
    k = _ints(kernel_size, 1, "max_unpool1d", "kernel_size")
    st = _ints(stride, 1, "max_unpool1d", "stride", allow_none=True) or k
    pad = _ints(padding, 1, "max_unpool1d", "padding")
    size = _unpool_size(input._data, 1, k, st, pad, output_size)
    if isinstance(indices, Tensor):
        indices = indices.unsqueeze(-2)
    y = _max_unpool(_unsq(input), indices, 2, (1, k[0]), (1, st[0]), (0, pad[0]),
                    (1,) + size, "max_unpool2d")
    return y.squeeze(-2)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool2d (``output_size`` resolves the ambiguous size).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> y, i = F.max_pool2d(ndgrad.arange(4.0).reshape(1, 2, 2), 2, return_indices=True)
    >>> F.max_unpool2d(y, i, 2)
    tensor([[[0., 0.],
             [0., 3.]]])
    """
    if input._blevel or getattr(indices, "_blevel", 0):
        r = _bcall(max_unpool2d, input, indices, kernel_size, stride, padding, output_size)
        if r is not NotImplemented:
            return r
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size,
                       "max_unpool2d")


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool3d.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> y, i = F.max_pool3d(ndgrad.arange(8.0).reshape(1, 2, 2, 2), 2, return_indices=True)
    >>> F.max_unpool3d(y, i, 2).sum()
    tensor(7.)
    """
    if input._blevel or getattr(indices, "_blevel", 0):
        r = _bcall(max_unpool3d, input, indices, kernel_size, stride, padding, output_size)
        if r is not NotImplemented:
            return r
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size,
                       "max_unpool3d")


# ---------------------------------------------------------------------------- fractional
def _fractional(input: Tensor, nsp: int, kernel_size: Any, output_size: Any,
                output_ratio: Any, return_indices: bool, _random_samples: Any) -> Any:
    fn = f"fractional_max_pool{nsp}d"
    x = input._data
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fn} requires specifying either an output_size or an output_ratio")
    kernel = _ints(kernel_size, nsp, fn, "kernel_size")
    if x.ndim not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{fn}(): Expected {nsp + 1}D or {nsp + 2}D tensor, but got: "
                           f"{list(x.shape)}")
    plane = x.shape[x.ndim - nsp:]
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else \
            (output_ratio,) * nsp
        if len(ratio) == 1:
            ratio = tuple(ratio) * nsp
        out = tuple(int(n * float(r)) for n, r in zip(plane, ratio))
    else:
        out = _ints(output_size, nsp, fn, "output_size")
    for j in range(nsp):
        if out[j] + kernel[j] - 1 > plane[j]:
            dim = ("time", "height", "width")[3 - nsp + j]
            where = f"{fn}()" if nsp == 2 else f"{fn}_out()"
            raise RuntimeError(f"{where}: pool {dim} {kernel[j]} too large relative to input "
                               f"{dim} {plane[j]}")
    _float_or_int(x, fn, False)
    lead = x.shape[:x.ndim - nsp]
    planes = lead if x.ndim == nsp + 2 else (1,) + lead
    if _random_samples is None:
        from .._creation import rand
        smp = rand(planes + (nsp,), dtype=_dtype._FROM_NP[x.dtype])._data.astype(np.float64)
    else:
        smp = np.asarray(_random_samples._data, np.float64)
        if smp.ndim != 3:
            raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {smp.ndim}")
        if smp.shape[0] < planes[0]:
            raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
        if smp.shape[1] != planes[1]:
            raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
        if smp.shape[2] != nsp:
            raise RuntimeError(f"Expect _random_samples.size(2) equals to {nsp}; got "
                               f"{smp.shape[2]}.")
        smp = smp[:planes[0]]       # extra rows (more samples than the batch) are unused
        if _random_samples.dtype != input.dtype:
            raise RuntimeError("Expect _random_samples to have the same dtype as input")
    idx = _wrap(fractional_indices(x, kernel, out, smp))
    op = FRACTIONAL2D if nsp == 2 else FRACTIONAL3D
    y = apply(op, (input,), (x,), (nsp, kernel, out, idx))
    return (y, idx) if return_indices else y


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling (Graham, 2014) over the last two dims: pseudo-random window
    starts from ``_random_samples`` (N, C, 2) uniform draws, drawn when not given.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.fractional_max_pool2d(ndgrad.arange(16.0).reshape(1, 1, 4, 4), 2, output_size=1)
    tensor([[[[15.]]]])
    """
    if input._blevel:
        r = _bcall(fractional_max_pool2d, input, kernel_size, output_size, output_ratio,
                   return_indices, _random_samples)
        if r is not NotImplemented:
            return r
    return _fractional(input, 2, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling over the last three dims (``_random_samples``: (N, C, 3)).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> x = ndgrad.arange(8.0).reshape(1, 1, 2, 2, 2)
    >>> F.fractional_max_pool3d(x, 2, output_size=1).flatten()
    tensor([7.])
    """
    if input._blevel:
        r = _bcall(fractional_max_pool3d, input, kernel_size, output_size, output_ratio,
                   return_indices, _random_samples)
        if r is not NotImplemented:
            return r
    return _fractional(input, 3, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


# ---------------------------------------------------------------------------- batching
def _trailing_rule(c, args):
    """Ops on the trailing spatial dims: the batch dim is one more leading dim."""
    return apply(c.op, tuple(c.ts), tuple(c.arrs), args)


def _max_rule(c, args):
    """Max pooling of a batched input: the windows' maxima are found again per row."""
    x = c.arrs[0]
    op = c.op
    if op in (MAX_POOL2D, MAX_POOL3D):
        nsp, kernel, st, pad, dil, ceil, _ = args
        plane = x.shape[x.ndim - nsp:]
        out = tuple(_pool_out(n, k, s, p, d, ceil)
                    for n, k, s, p, d in zip(plane, kernel, st, pad, dil))
        idx = max_pool_indices(x, kernel, st, pad, dil, out)
    elif op in (ADAPTIVE_MAX2D, ADAPTIVE_MAX3D):
        idx = adaptive_max_indices(x, args[1])
    else:
        from ._batching import _unsupported
        raise _unsupported(op, "fractional max pooling of a batched input")
    return apply(op, tuple(c.ts), tuple(c.arrs), args[:-1] + (_wrap(idx),))


def _register() -> None:
    from ._batching import RULES
    for op in (MAX_POOL2D, MAX_POOL3D, ADAPTIVE_MAX2D, ADAPTIVE_MAX3D, FRACTIONAL2D,
               FRACTIONAL3D, AVG_POOL2D, AVG_POOL3D, ADAPTIVE_AVG2D, ADAPTIVE_AVG3D):
        tied(op)
    for op in (SEPARABLE, AVG_POOL2D, AVG_POOL3D, ADAPTIVE_AVG2D, ADAPTIVE_AVG3D, GATHER,
               SCATTER_ADD, MAX_UNPOOL2D, MAX_UNPOOL3D, MAX_POOL_INDICES, ADAPTIVE_MAX_INDICES):
        RULES[op] = _trailing_rule
    for op in (MAX_POOL2D, MAX_POOL3D, ADAPTIVE_MAX2D, ADAPTIVE_MAX3D, FRACTIONAL2D,
               FRACTIONAL3D):
        RULES[op] = _max_rule


_register()

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "fractional_max_pool2d",
           "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
_MAXP = ("Tensor input, Any kernel_size, Any stride=None, Any padding=0, Any dilation=1, "
         "bool ceil_mode=False, bool return_indices=False")
_AVGP = ("Tensor input, Any kernel_size, Any stride=None, Any padding=0, bool ceil_mode=False, "
         "bool count_include_pad=True, Any divisor_override=None")
_FRAC = ("Tensor input, Any kernel_size, Any output_size=None, Any output_ratio=None, "
         "bool return_indices=False, Any _random_samples=None")
SIGNATURES = "\n".join(
    [f"max_pool{n}d({_MAXP})" for n in (1, 2, 3)] +
    [f"max_pool{n}d_with_indices({_MAXP})" for n in (1, 2, 3)] +
    ["avg_pool1d(Tensor input, Any kernel_size, Any stride=None, Any padding=0, "
     "bool ceil_mode=False, bool count_include_pad=True)"] +
    [f"avg_pool{n}d({_AVGP})" for n in (2, 3)] +
    [f"adaptive_avg_pool{n}d(Tensor input, Any output_size)" for n in (1, 2, 3)] +
    [f"adaptive_max_pool{n}d(Tensor input, Any output_size, bool return_indices=False)"
     for n in (1, 2, 3)] +
    [f"adaptive_max_pool{n}d_with_indices(Tensor input, Any output_size, "
     "bool return_indices=False)" for n in (1, 2, 3)] +
    [f"lp_pool{n}d(Tensor input, Any norm_type, Any kernel_size, Any stride=None, "
     "bool ceil_mode=False)" for n in (1, 2, 3)] +
    [f"max_unpool{n}d(Tensor input, Any indices, Any kernel_size, Any stride=None, "
     "Any padding=0, Any output_size=None)" for n in (1, 2, 3)] +
    [f"fractional_max_pool{n}d({_FRAC})" for n in (2, 3)] +
    [f"fractional_max_pool{n}d_with_indices({_FRAC})" for n in (2, 3)])
