"""nn op family: batch/instance/layer/group/rms/local-response norm, normalize.

Note [Fused normalization]
batch_norm, layer_norm, group_norm and rms_norm share one kernel. Each views its input as a
canonical array ``X`` whose axes ``axes`` are the ones the statistics reduce over (the rest index
the groups: channels for batch norm, rows for layer norm, (sample, group) for group norm) and
its weight/bias as an array ``WB`` broadcastable to ``X``. With ``xhat = (x - mean) * rstd``
(rms norm: ``x * rstd``, no centering) the forward is ``xhat * w + b`` and, per group of ``M``
reduced elements, the Jacobian of ``xhat`` is the symmetric map

    P(v) = rstd * (v - mean(v) - xhat * mean(xhat * v))      (rms norm: without ``mean(v)``)

so the backward is ``dx = P(g * w)``, ``dw = sum(g * xhat)``, ``db = sum(g)``: one op
(``*_backward``) computed in NumPy in a few passes. Its own VJP (second order) is written with
ndgrad ops from the closed form of the derivative of ``<ggx, P_x(h)>`` in ``x``:

    grad_x = -(A - B) * rstd**2 * xhat / M - rstd * (P(ggx) <xhat, h> + <ggx, xhat> P(h)) / M
             + P(g * ggw)
    A = <ggx, h> - M mean(ggx) mean(h),   B = <ggx, xhat> <xhat, h> / M

(``<,>`` sums over the reduced axes), with ``rstd`` and ``xhat`` recomputed from ``x`` with
ndgrad ops so that third order works as well. In evaluation mode (batch norm with running
statistics) the statistics are constants and ``P(v) = rstd * v``.

The statistics an op computes (PyTorch's ``result1``/``result2``: mean and rstd) are tensor
arguments of the op (Note [Tensor arguments]): the public function allocates them and the
forward fills them, so they are computed once and saved as PyTorch saves them.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> x = ndgrad.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    >>> y = F.layer_norm(x, (3,))
    >>> y.grad_fn.name()
    'NativeLayerNormBackward0'
    >>> [round(v, 4) for v in y.tolist()[0]]
    [-1.2247, 0.0, 1.2247]
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import _dtype, _meta
from ..autograd import batching as _bt
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall, per_entry as _per_entry
from ._dispatch import Op, apply

# A missing weight or bias: a tensor that never requires grad (its edge is (None, 0), as
# PyTorch's undefined tensor), passed with array None.
_ABSENT = _wrap(np.zeros(0))
_LOWP = _dtype.HALF_NP


def _compute_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt in _LOWP else dt


# ---------------------------------------------------------------------------- numpy kernels
# lay = (X, axes, WB, pshape): canonical input shape, reduced axes, canonical weight shape,
# the weight's own shape.
_LETTERS = "abcdefgh"
_SUBS: dict = {}


def _subs(ndim: int, axes: tuple, two: bool) -> str:
    key = (ndim, axes, two)
    r = _SUBS.get(key)
    if r is None:
        full = _LETTERS[:ndim]
        out = "".join(c for i, c in enumerate(full) if i not in axes)
        r = f"{full},{full}->{out}" if two else f"{full}->{out}"
        _SUBS[key] = r
    return r


def _keep_shape(shape: tuple, axes: tuple) -> tuple:
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


# Below this many elements einsum's fixed cost (~8 us) exceeds a ufunc reduction's.
_EINSUM_MIN = 16384
_add_reduce = np.add.reduce


def _rsum(a: np.ndarray, axes: tuple) -> np.ndarray:
    """Sum over ``axes``, kept as size-1 dims (einsum: one pass, no temporary)."""
    if a.size < _EINSUM_MIN:
        return _add_reduce(a, axes, keepdims=True)
    return np.einsum(_subs(a.ndim, axes, False), a).reshape(_keep_shape(a.shape, axes))


def _rdot(a: np.ndarray, b: np.ndarray, axes: tuple) -> np.ndarray:
    """``(a * b).sum(axes)`` kept as size-1 dims, without the product temporary."""
    if a.size < _EINSUM_MIN:
        return _add_reduce(a * b, axes, keepdims=True)
    return np.einsum(_subs(a.ndim, axes, True), a, b).reshape(_keep_shape(a.shape, axes))


def _count(X, axes) -> int:
    n = 1
    for a in axes:
        n *= X[a]
    return n


def _stats(xa: np.ndarray, axes: tuple, center: bool, eps: float, out: Any = None) -> tuple:
    """(mean or None, rstd, xa - mean (a new array, or ``out``, when centered)) over
    ``axes``."""
    n = _count(xa.shape, axes)
    if center:
        mean = _rsum(xa, axes) / max(n, 1)
        d = np.subtract(xa, mean, out=out)
    else:
        mean, d = None, xa
    var = _rdot(d, d, axes) / max(n, 1)
    rstd = 1.0 / np.sqrt(var + eps)
    return mean, rstd, d


def _norm_fwd_core(x, w, b, mean_t, rstd_t, lay, center, train, eps, out=None):
    """The forward on one array (``out``: where to write the result, in the compute
    dtype)."""
    X, axes, WB, _ = lay
    cdt = _compute_dtype(x.dtype)
    xa = x.reshape(X).astype(cdt, copy=False)
    wb = w.reshape(WB).astype(cdt, copy=False) if w is not None else None
    bb = b.reshape(WB).astype(cdt, copy=False) if b is not None else None
    if train:
        mean, rstd, d = _stats(xa, axes, center, eps, out)
        if center:
            mean_t._data[...] = mean.reshape(mean_t._data.shape)
        rstd_t._data[...] = rstd.reshape(rstd_t._data.shape)
        y = d if center else None
    else:
        stat_shape = _keep_shape(X, axes)
        rstd = rstd_t._data.reshape(stat_shape).astype(cdt, copy=False)
        mean = mean_t._data.reshape(stat_shape).astype(cdt, copy=False) if center else None
        y = None
    if wb is not None and _small_fold(X, rstd.shape, WB):
        # scale rstd * w much smaller than the input (batch norm: one per group; group norm:
        # one per (sample, channel)): one multiply and one add
        k = rstd * wb
        if y is None:
            y = np.multiply(xa, k, out=out)
            shift = -mean * k if center else None
            if bb is not None:
                shift = bb if shift is None else shift + bb
            if shift is not None:
                y += shift
        else:
            y *= k
            if bb is not None:
                y += bb
    else:
        if y is None:
            y = np.subtract(xa, mean, out=out) if center else np.multiply(xa, 1, out=out)
        y *= rstd
        if wb is not None:
            y *= wb
        if bb is not None:
            y += bb
    return y.astype(x.dtype, copy=False).reshape(x.shape)


def _small_fold(X: tuple, stat_shape: tuple, WB: tuple) -> bool:
    """True when ``rstd * w`` (broadcast) is at most an eighth of the input's size."""
    k = 1
    for s, w in zip(stat_shape, WB):
        k *= max(s, w)
    return k * 8 <= _count(X, tuple(range(len(X)))) or tuple(stat_shape) == tuple(WB)


def _param_axes(X: tuple, WB: tuple) -> tuple:
    return tuple(i for i, p in enumerate(WB) if p == 1)


def _norm_bwd_core(g, x, w, mean_t, rstd_t, lay, center, train, eps, out=None):
    X, axes, WB, pshape = lay
    cdt = _compute_dtype(x.dtype)
    stat_shape = _keep_shape(X, axes)
    ga = g.reshape(X).astype(cdt, copy=False)
    xa = x.reshape(X).astype(cdt, copy=False)
    rstd = rstd_t._data.reshape(stat_shape).astype(cdt, copy=False)
    wb = w.reshape(WB).astype(cdt, copy=False) if w is not None else None
    if train and _small_fold(X, stat_shape, WB) and (wb is not None or WB == stat_shape):
        if wb is None:
            wb = np.ones(WB, cdt)
        return _norm_bwd_folded(ga, xa, wb, mean_t, rstd, lay, center, x.dtype, x.shape, out)
    if center:
        xhat = np.subtract(xa, mean_t._data.reshape(stat_shape).astype(cdt, copy=False))
    else:
        xhat = np.array(xa, copy=True)
    xhat *= rstd
    paxes = _param_axes(X, WB)
    db = _rsum(ga, paxes)
    dw = _rdot(ga, xhat, paxes)
    n = max(_count(X, axes), 1)
    if not train:
        dx = np.multiply(ga, rstd * wb if wb is not None else rstd, out=out)
    elif wb is None or wb.shape == stat_shape:
        # the weight is constant over each group (batch norm): dx = k*(g - mean(g) -
        # xhat*mean(g*xhat)) with k = w*rstd, the sums being db and dw when they reduce
        # over the same axes
        same = paxes == axes
        s_g = db if same else _rsum(ga, axes)
        s_xh = dw if same else _rdot(ga, xhat, axes)
        k = rstd * wb if wb is not None else rstd
        dx = np.multiply(ga, k, out=out)
        xhat *= k * s_xh / n
        dx -= xhat
        if center:
            dx -= k * s_g / n
    else:
        h = np.multiply(ga, wb, out=out)
        c_xh = _rdot(h, xhat, axes) / n
        xhat *= c_xh
        if center:
            xhat += _rsum(h, axes) / n
        h -= xhat
        h *= rstd
        dx = h
    dt = x.dtype
    return (dx.astype(dt, copy=False).reshape(x.shape), dw.astype(dt, copy=False).reshape(pshape),
            db.astype(dt, copy=False).reshape(pshape))


def _norm_bwd_folded(ga, xa, wb, mean_t, rstd, lay, center, dt, xshape, out=None):
    """The training backward when ``rstd * w`` is small (group norm): with the sums of ``g``
    and ``x*g`` over the axes the weight is constant on, ``dx = g*A + x*B + C`` for small
    ``A`` (rstd*w) and per-group ``B``, ``C``; xhat is never formed."""
    X, axes, WB, pshape = lay
    stat_shape = _keep_shape(X, axes)
    inner = tuple(a for a in axes if WB[a] == 1)
    rest = tuple(a for a in axes if a not in inner)
    outer = tuple(a for a in _param_axes(X, WB) if a not in inner)
    n = max(_count(X, axes), 1)
    sg = _rsum(ga, inner)
    sxg = _rdot(xa, ga, inner)
    s_h = (sg * wb).sum(rest, keepdims=True) if rest else sg * wb
    s_xh = (sxg * wb).sum(rest, keepdims=True) if rest else sxg * wb
    r = rstd
    if center:
        mu = mean_t._data.reshape(stat_shape).astype(r.dtype, copy=False)
        c = r * (s_xh - mu * s_h) / n
        C = r * r * c * mu - r * s_h / n
        dw = (r * (sxg - mu * sg)).sum(outer, keepdims=True) if outer else r * (sxg - mu * sg)
    else:
        c = r * s_xh / n
        C = None
        dw = (r * sxg).sum(outer, keepdims=True) if outer else r * sxg
    db = sg.sum(outer, keepdims=True) if outer else sg
    B = -r * r * c
    dx = np.multiply(xa, B, out=out)
    if C is not None:
        dx += C
    # + g * (r*w), through a small buffer reused along axis 0 (no second input-sized array)
    A = r * wb
    per = _count(X, tuple(range(1, len(X))))
    rows = max(1, _BLOCK // max(per, 1))
    if rows >= X[0] or A.shape[0] != 1:
        dx += ga * A
    else:
        buf = np.empty((rows,) + tuple(X[1:]), dx.dtype)
        for s in range(0, X[0], rows):
            e = min(s + rows, X[0])
            t = buf[:e - s]
            np.multiply(ga[s:e], A, out=t)
            dx[s:e] += t
    return (dx.astype(dt, copy=False).reshape(xshape), dw.astype(dt, copy=False).reshape(pshape),
            db.astype(dt, copy=False).reshape(pshape))


# Note [Blocked normalization]
# A large input whose first canonical axis is neither reduced nor carries the weight (rows of
# layer/rms norm, samples of group norm) is processed in blocks of rows of about _BLOCK
# elements: the kernels' several NumPy passes then run on blocks that stay in the CPU cache
# instead of streaming the whole array from memory each time. Each block writes its slice of
# the output (and of the statistics holders); parameter gradients are summed over blocks.
_BLOCK = 1 << 16


def _blocks(X: tuple, axes: tuple, WB: tuple) -> int:
    """Rows per block along axis 0, or 0 when the input is processed whole."""
    if 0 in axes or WB[0] != 1 or X[0] < 2:
        return 0
    size = _count(X, tuple(range(len(X))))
    if size < 4 * _BLOCK:
        return 0
    return max(1, _BLOCK // max(size // X[0], 1))


def _stat_views(mean_t, rstd_t, X, axes, center):
    stat_shape = _keep_shape(X, axes)
    m = mean_t._data.reshape(stat_shape) if center else None
    return m, rstd_t._data.reshape(stat_shape)


def _norm_fwd(x, w, b, mean_t, rstd_t, lay, center, train, eps):
    X, axes, WB, pshape = lay
    rows = _blocks(X, axes, WB)
    if not rows or type(x) is _meta.MetaArray:      # (meta: whole-array ufuncs compute nothing)
        return _norm_fwd_core(x, w, b, mean_t, rstd_t, lay, center, train, eps)
    xa = x.reshape(X)
    y = np.empty_like(x, order="C", shape=X)        # (meta for a meta x: Note [Meta arrays])
    direct = _compute_dtype(x.dtype) == x.dtype      # blocks written in place
    m, r = _stat_views(mean_t, rstd_t, X, axes, center)
    for s in range(0, X[0], rows):
        e = min(s + rows, X[0])
        blk = ((e - s,) + tuple(X[1:]), axes, WB, pshape)
        mt = _wrap(m[s:e]) if center else mean_t
        yb = _norm_fwd_core(xa[s:e], w, b, mt, _wrap(r[s:e]), blk, center, train, eps,
                            y[s:e] if direct else None)
        if not direct:
            y[s:e] = yb
    return y.reshape(x.shape)


def _norm_bwd(g, x, w, mean_t, rstd_t, lay, center, train, eps):
    X, axes, WB, pshape = lay
    rows = _blocks(X, axes, WB)
    if not rows:
        return _norm_bwd_core(g, x, w, mean_t, rstd_t, lay, center, train, eps)
    xa, ga = x.reshape(X), g.reshape(X)
    cdt = _compute_dtype(x.dtype)
    dx = np.empty(X, x.dtype)
    direct = cdt == x.dtype                       # blocks written in place
    dw = np.zeros(pshape, cdt)
    db = np.zeros(pshape, cdt)
    m, r = _stat_views(mean_t, rstd_t, X, axes, center)
    for s in range(0, X[0], rows):
        e = min(s + rows, X[0])
        blk = ((e - s,) + tuple(X[1:]), axes, WB, pshape)
        mt = _wrap(m[s:e]) if center else mean_t
        dxb, dwb, dbb = _norm_bwd_core(ga[s:e], xa[s:e], w, mt, _wrap(r[s:e]), blk, center,
                                       train, eps, dx[s:e] if direct else None)
        if not direct:
            dx[s:e] = dxb
        dw += dwb
        db += dbb
    return (dx.reshape(x.shape), dw.astype(x.dtype, copy=False),
            db.astype(x.dtype, copy=False))


# ---------------------------------------------------------------------------- derivative rules
def _unpack_args(ctx):
    """(mean_t, rstd_t, lay, center, train, eps) from an op's args (same positions for all)."""
    a = ctx._args
    return a[0], a[1], a[2], a[3], a[4], a[5]


def _canon_stats(x: Tensor, mean_t, rstd_t, lay, center, train, eps):
    """``xc`` (x canonical), ``xhat``, ``r`` as ndgrad tensors; differentiable in ``x`` when
    the statistics are computed from it (training)."""
    X, axes, WB, _ = lay
    xc = x.reshape(X)
    if train:
        if center:
            mu = xc.mean(axes, keepdim=True)
            d = xc - mu
        else:
            d = xc
        var = (d * d).mean(axes, keepdim=True)
        r = (var + eps).rsqrt()
    else:
        stat_shape = tuple(1 if i in axes else s for i, s in enumerate(X))
        r = rstd_t.detach().reshape(stat_shape).to(x.dtype)
        d = xc - mean_t.detach().reshape(stat_shape).to(x.dtype) if center else xc
    return xc, d * r, r


def _P(v: Tensor, xhat: Tensor, r: Tensor, axes, center, train) -> Tensor:
    if not train:
        return v * r
    out = v - v.mean(axes, keepdim=True) if center else v
    return (out - xhat * (xhat * v).mean(axes, keepdim=True)) * r


def _norm_vjp(ctx, g):
    x, w = ctx.saved[0], ctx.saved[1]
    mean_t, rstd_t, lay, center, train, eps = _unpack_args(ctx)
    has_w = w is not None
    ww = w if has_w else _ABSENT
    wa = ww._data if has_w else None
    dx, dw, db = apply(_BWD[ctx._op.name], (g, x, ww), (g._data, x._data, wa),
                       (mean_t, rstd_t, lay, center, train, eps))
    if len(ctx.next_functions) == 2:    # rms_norm: no bias
        return (dx if ctx.needs_input_grad(0) else None,
                dw if has_w and ctx.needs_input_grad(1) else None)
    return (dx if ctx.needs_input_grad(0) else None,
            dw if has_w and ctx.needs_input_grad(1) else None,
            db if ctx.needs_input_grad(2) else None)


def _norm_jvp(ctx, tx, tw, tb=None):
    x, w = ctx.inputs[0], ctx.inputs[1]
    mean_t, rstd_t, lay, center, train, eps = _unpack_args(ctx)
    X, axes, WB, _ = lay
    has_w = w is not _ABSENT
    xc, xhat, r = _canon_stats(x, mean_t, rstd_t, lay, center, train, eps)
    out = None
    if tx is not None:
        out = _P(tx.reshape(X), xhat, r, axes, center, train)
        if has_w:
            out = out * w.reshape(WB)
    if tw is not None:
        t = xhat * tw.reshape(WB)
        out = t if out is None else out + t
    if tb is not None:
        t = tb.reshape(WB)
        out = t if out is None else out + t
    if out is None:
        return None
    return out.expand(X).reshape(x.shape) if tuple(out.shape) != tuple(X) else \
        out.reshape(x.shape)


def _norm_bwd_vjp(ctx, ggx, ggw, ggb):
    g, x, w = ctx.saved[0], ctx.saved[1], ctx.saved[2]
    mean_t, rstd_t, lay, center, train, eps = _unpack_args(ctx)
    X, axes, WB, pshape = lay
    paxes = _param_axes(X, WB)
    M = _count(X, axes)
    has_w = w is not None
    xc, xhat, r = _canon_stats(x, mean_t, rstd_t, lay, center, train, eps)
    gc = g.reshape(X)
    wc = w.reshape(WB) if has_w else None
    ggxc = ggx.reshape(X)
    ggwc = ggw.reshape(WB)
    ggbc = ggb.reshape(WB)
    h = gc * wc if has_w else gc
    Pggx = _P(ggxc, xhat, r, axes, center, train)
    grad_g = (Pggx * wc if has_w else Pggx) + ggwc * xhat + ggbc
    grad_w = (gc * Pggx).sum(paxes).reshape(pshape) if has_w else None
    gx = _P(gc * ggwc, xhat, r, axes, center, train)
    if train and M:
        xh_h = (xhat * h).sum(axes, keepdim=True)
        ggx_xh = (ggxc * xhat).sum(axes, keepdim=True)
        A = (ggxc * h).sum(axes, keepdim=True)
        if center:
            A = A - ggxc.sum(axes, keepdim=True) * h.sum(axes, keepdim=True) / M
        B = ggx_xh * xh_h / M
        Ph = _P(h, xhat, r, axes, center, train)
        gx = gx - (A - B) * r * r * xhat / M - r * (Pggx * xh_h + ggx_xh * Ph) / M
    # in evaluation mode without weight the backward does not depend on x: no gradient
    grad_x = gx.reshape(x.shape) if train or has_w else None
    return (grad_g.expand(X).reshape(g.shape) if ctx.needs_input_grad(0) else None,
            grad_x if grad_x is not None and ctx.needs_input_grad(1) else None,
            grad_w if ctx.needs_input_grad(2) else None)


def _bwd_jvp(ctx, tg, tx, tw):
    # Tangents of (dx, dw, db) = (P_x(g*w), sum(g*xhat), sum(g)) (Note [Fused normalization]):
    # dxhat = P(tx), drstd = -rstd**2 * mean(xhat * tx), so
    # d[P_x(h)] = P(dh) + (drstd / rstd) P(h) - rstd * (P(tx) mean(xhat h) + xhat mean(P(tx) h))
    g, x, w = ctx.inputs
    mean_t, rstd_t, lay, center, train, eps = _unpack_args(ctx)
    X, axes, WB, pshape = lay
    paxes = _param_axes(X, WB)
    has_w = w is not _ABSENT
    xc, xhat, r = _canon_stats(x, mean_t, rstd_t, lay, center, train, eps)
    gc = g.reshape(X)
    wc = w.reshape(WB) if has_w else None
    h = gc * wc if has_w else gc
    th = None
    if tg is not None:
        tgc = tg.reshape(X)
        th = tgc * wc if has_w else tgc
    if tw is not None and has_w:
        t = gc * tw.reshape(WB)
        th = t if th is None else th + t
    t_dx = _P(th, xhat, r, axes, center, train) if th is not None else None
    t_dw = (tgc * xhat).sum(paxes) if tg is not None else None
    t_db = tgc.sum(paxes) if tg is not None else None
    if tx is not None:
        txc = tx.reshape(X)
        dxhat = _P(txc, xhat, r, axes, center, train)
        t = (gc * dxhat).sum(paxes)
        t_dw = t if t_dw is None else t_dw + t
        if train:
            dr_r = -(r * (xhat * txc).mean(axes, keepdim=True))
            t = dr_r * _P(h, xhat, r, axes, center, train) - r * (
                dxhat * (xhat * h).mean(axes, keepdim=True)
                + xhat * (dxhat * h).mean(axes, keepdim=True))
            t_dx = t if t_dx is None else t_dx + t
    zeros_p = None

    def _p(t):
        nonlocal zeros_p
        if t is not None:
            return t.reshape(pshape)
        if zeros_p is None:
            zeros_p = x.new_zeros(pshape)
        return zeros_p
    t_dx = t_dx.expand(X).reshape(x.shape) if t_dx is not None else x.new_zeros(x.shape)
    return t_dx, _p(t_dw), _p(t_db)


def _w_present(ts, edges) -> bool:
    return ts[1] is not _ABSENT


_ARGS6 = ("result1", "result2", "layout", "center", "training", "eps")

LAYER_NORM = Op("layer_norm", "NativeLayerNormBackward0", _norm_fwd, _norm_vjp,
                inputs=("input", "weight", "bias"), args=_ARGS6,
                saves=("input", "weight", "bias", "result1", "result2"),
                save_if=(None, _w_present, lambda ts, e: ts[2] is not _ABSENT, None, None),
                jvp=_norm_jvp)
RMS_NORM = Op("rms_norm", "FusedRmsNormBackward0", lambda x, w, *a: _norm_fwd(x, w, None, *a),
              _norm_vjp, inputs=("input", "weight"), args=_ARGS6,
              saves=("input", "weight", "result2"), save_if=(None, _w_present, None),
              jvp=_norm_jvp)
# batch norm also saves the running statistics (extra tensor arguments, as PyTorch's node)
BATCH_NORM = Op("batch_norm", "NativeBatchNormBackward0",
                lambda x, w, b, *a: _norm_fwd(x, w, b, *a[:6]), _norm_vjp,
                inputs=("input", "weight", "bias"),
                args=_ARGS6 + ("running_mean", "running_var"),
                saves=("input", "weight", "running_mean", "running_var", "result1", "result2"),
                save_if=(None, _w_present, None, None, None, None), jvp=_norm_jvp)
GROUP_NORM = Op("group_norm", "NativeGroupNormBackward0", _norm_fwd, _norm_vjp,
                inputs=("input", "weight", "bias"), args=_ARGS6,
                saves=("input", "weight", "result1", "result2"),
                save_if=(None, _w_present, None, None), jvp=_norm_jvp)


def _bwd_op(name: str, node: str) -> Op:
    return Op(name, node, _norm_bwd, _norm_bwd_vjp, inputs=("grad_out", "input", "weight"),
              args=_ARGS6, saves=("grad_out", "input", "weight"),
              save_if=(None, None, lambda ts, e: ts[2] is not _ABSENT), num_outputs=3,
              jvp=_bwd_jvp)


_BWD = {
    "layer_norm": _bwd_op("native_layer_norm_backward", "NativeLayerNormBackwardBackward0"),
    "rms_norm": _bwd_op("_fused_rms_norm_backward", "FusedRmsNormBackwardBackward0"),
    "batch_norm": _bwd_op("native_batch_norm_backward", "NativeBatchNormBackwardBackward0"),
    "group_norm": _bwd_op("native_group_norm_backward", "NativeGroupNormBackwardBackward0"),
}


def _holder(shape: tuple, dt: np.dtype, meta: bool = False) -> Tensor:
    if meta:                                  # Note [Meta arrays]
        return _wrap(_meta.empty(shape, _compute_dtype(dt)))
    return _wrap(np.empty(shape, _compute_dtype(dt)))


def _run(op: Op, x: Tensor, w: Optional[Tensor], b: Optional[Tensor], lay: tuple,
         stat_shape: tuple, center: bool, train: bool, eps: float,
         mean_t: Optional[Tensor] = None, rstd_t: Optional[Tensor] = None,
         extra: tuple = ()) -> tuple:
    """Apply a normalization op; returns (out, mean_t, rstd_t)."""
    dt = x._data.dtype
    if train:
        meta = type(x._data) is _meta.MetaArray
        mean_t = _holder(stat_shape, dt, meta) if center else _wrap(np.empty(0, dt))
        rstd_t = _holder(stat_shape, dt, meta)
    ts = [x, w if w is not None else _ABSENT]
    arrs = [x._data, w._data if w is not None else None]
    if op is not RMS_NORM:
        ts.append(b if b is not None else _ABSENT)
        arrs.append(b._data if b is not None else None)
    out = apply(op, tuple(ts), tuple(arrs),
                (mean_t, rstd_t, lay, center, train, float(eps)) + extra)
    return out, mean_t, rstd_t


# ---------------------------------------------------------------------------- batching
def _norm_rule(c, args):
    """Batching rule of the normalization ops and their backward ops: the op per row of the
    batch, stacked. When the input ``x`` itself is batched in training, each row has its own
    statistics: fresh holders for a forward op, statistics recomputed for a backward op."""
    from .shape import select, stack
    mean_t, rstd_t, lay, center, train, eps = args[:6]
    backward = c.op in _BWD_OPS
    xi = 1 if backward else 0          # position of x among the op's tensors
    rows = []
    for k in range(c.B):
        ts = tuple(select(t, 0, k) if bd else t for t, bd in zip(c.ts, c.bd))
        arrs = tuple(None if t is _ABSENT else t._data for t in ts)
        a = args
        if c.bd[xi] and train:
            if backward:
                xa = ts[1]._data
                mu, rs, _ = _stats(xa.reshape(lay[0]).astype(_compute_dtype(xa.dtype),
                                                              copy=False), lay[1], center, eps)
                m = _wrap(mu.reshape(mean_t._data.shape)) if center else mean_t
                a = (m, _wrap(rs.reshape(rstd_t._data.shape))) + tuple(args[2:])
            else:
                a = (_wrap(np.empty_like(mean_t._data)),
                     _wrap(np.empty_like(rstd_t._data))) + tuple(args[2:])
        rows.append(apply(c.op, ts, arrs, a))
    if isinstance(rows[0], tuple):
        return tuple(stack([r[i] for r in rows], 0) for i in range(len(rows[0])))
    return stack(rows, 0)


_BWD_OPS = frozenset(_BWD.values())


def _register() -> None:
    from ._batching import RULES
    for op in (LAYER_NORM, RMS_NORM, BATCH_NORM, GROUP_NORM):
        RULES[op] = _norm_rule
    for op in _BWD.values():
        RULES[op] = _norm_rule


_register()


# ---------------------------------------------------------------------------- public functions
def _check_float(x: Tensor, name: str) -> None:
    if not (x._data.dtype.kind in "fc" or x._data.dtype in _LOWP):
        raise NotImplementedError(f"\"{name}\" not implemented for "
                                  f"'{_dtype._FROM_NP[x._data.dtype]._torch_name}'")


def _check_mixed(x: Tensor, *params: Optional[Tensor]) -> None:
    """PyTorch's CPU rule: parameters have the input's dtype, or float32 for a half/bfloat16
    input."""
    xd = x._data.dtype
    for p in params:
        if p is None or p._data.dtype == xd:
            continue
        if xd in _LOWP and p._data.dtype == np.float32:
            continue
        if xd == np.float32:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _ln_layout(x: Tensor, normalized_shape: tuple, weight, bias, name: str) -> tuple:
    ns = tuple(int(s) for s in normalized_shape)
    if len(ns) == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for t, what in ((weight, "weight"), (bias, "bias")):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {what} to be of same shape as normalized_shape, but "
                               f"got {what} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(ns)}")
    xs = tuple(x.shape)
    k = len(ns)
    if len(xs) < k or xs[len(xs) - k:] != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in ns)}], but got input of size"
                           f"{list(xs)}")
    M = _prod(ns)
    R = _prod(xs[:len(xs) - k])
    lay = ((R, M), (1,), (1, M), ns)
    stat_shape = xs[:len(xs) - k] + (1,) * k
    return lay, stat_shape


def layer_norm(input: Tensor, normalized_shape: Any, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Layer normalization over the last ``len(normalized_shape)`` dims (one fused op).

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.layer_norm(ndgrad.tensor([[1.0, 3.0]]), (2,))
    tensor([[-1.0000,  1.0000]])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(layer_norm, input, normalized_shape, weight, bias, eps)
        if r is not NotImplemented:
            return r
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    lay, stat_shape = _ln_layout(input, normalized_shape, weight, bias, "layer_norm")
    _check_float(input, "LayerNormKernelImpl")
    _check_mixed(input, weight, bias)
    return _run(LAYER_NORM, input, weight, bias, lay, stat_shape, True, True, eps)[0]


def rms_norm(input: Tensor, normalized_shape: Any, weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """Root-mean-square normalization over the last dims: ``x / sqrt(mean(x**2) + eps) * w``;
    ``eps=None`` is the input dtype's machine epsilon.

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.rms_norm(ndgrad.tensor([[3.0, 4.0]]), (2,), eps=0.0)
    tensor([[0.8485, 1.1314]])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(rms_norm, input, normalized_shape, weight, eps)
        if r is not NotImplemented:
            return r
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    lay, stat_shape = _ln_layout(input, normalized_shape, weight, None, "rms_norm")
    _check_float(input, "rms_norm")
    if eps is None:
        eps = float(np.finfo(_compute_dtype(input._data.dtype)).eps) \
            if input._data.dtype.kind == "f" else float(np.finfo(np.float32).eps)
        if input._data.dtype in _LOWP:
            eps = float(np.finfo(np.float16).eps) if input._data.dtype == np.float16 else \
                0.0078125
    return _run(RMS_NORM, input, weight, None, lay, stat_shape, False, True, eps)[0]


def _verify_bn_size(shape: Any) -> None:
    n = int(shape[0]) if shape else 1
    for s in shape[2:]:
        n *= int(s)
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{shape}")


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch normalization over all dims but the channel dim (1); in training the running
    statistics are updated in place (``momentum``, unbiased variance).

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.batch_norm(ndgrad.tensor([[1.0], [3.0]]), None, None, training=True)
    tensor([[-1.0000],
            [ 1.0000]])
    """
    if input._blevel:  # Note [Batched backward]
        if training and _bt.is_batched(input) and any(
                t is not None and not _bt.is_batched(t) for t in (running_mean, running_var)):
            err = RuntimeError(
                "Batch norm got a batched tensor as input while the running_mean or "
                "running_var, which will be updated in place, were not batched.")
            err._vmap_user = True  # type: ignore[attr-defined]  # vmap's own error: no re-run
            raise err
        if training and running_mean is not None and _bt.is_batched(running_mean):
            # each entry updates its own running statistics in place: per entry (a pass on
            # logical proxies would write entry 0's statistics once too many)
            return _per_entry(batch_norm, input, running_mean, running_var, weight, bias,
                              training, momentum, eps)
        r = _bcall(batch_norm, input, running_mean, running_var, weight, bias, training,
                   momentum, eps)
        if r is not NotImplemented:
            return r
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be "
                         "None")
    xs = tuple(input.shape)
    if training:
        _verify_bn_size(input.shape)
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    C = xs[1] if len(xs) > 1 else 0
    for t, what in ((running_mean, "running_mean"), (running_var, "running_var"),
                    (weight, "weight"), (bias, "bias")):       # PyTorch's order
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{what} should contain {C} elements not {t.numel()}")
    _check_float(input, "batch_norm")
    if input.numel() == 0:          # before the dtype rules, as torch
        return input.clone()
    _check_mixed(input, weight, bias, running_mean, running_var)
    N = xs[0] if xs else 1
    S = _prod(xs[2:])
    lay = ((N, C, S), (0, 2), (1, C, 1), (C,))
    use_stats = training or running_mean is None or running_var is None
    if not use_stats:
        assert running_mean is not None and running_var is not None    # use_stats above
        dt = _compute_dtype(input._data.dtype)
        mean_t = _wrap(running_mean._data.astype(dt).reshape(C))
        rstd_t = _wrap((1.0 / np.sqrt(running_var._data.astype(dt) + eps)).reshape(C))
        return _run(BATCH_NORM, input, weight, bias, lay, (C,), True, False, eps,
                    mean_t, rstd_t, (running_mean, running_var))[0]
    out, mean_t, rstd_t = _run(BATCH_NORM, input, weight, bias, lay, (C,), True, True, eps,
                               extra=(running_mean, running_var))
    if training and running_mean is not None:
        # Written in place as part of the op: like PyTorch's kernel, no version bump (the
        # node saves them; a second forward before the backward is fine).
        n = N * S
        rm = running_mean._data
        rm[...] = (1 - momentum) * rm + momentum * mean_t._data.astype(rm.dtype)
        assert running_var is not None       # both or neither (checked by the callers)
        rv = running_var._data
        var = 1.0 / np.square(rstd_t._data.astype(np.float64)) - eps
        unbiased = var * n / (n - 1) if n > 1 else np.full_like(var, np.inf)
        rv[...] = (1 - momentum) * rv + momentum * unbiased.astype(rv.dtype)
    return out


def instance_norm(input: Tensor, running_mean: Optional[Tensor] = None,
                  running_var: Optional[Tensor] = None, weight: Optional[Tensor] = None,
                  bias: Optional[Tensor] = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Instance normalization: batch norm of each (sample, channel) over its spatial dims
    (PyTorch's composition: a view to ``(1, N*C, ...)``, batch_norm, a view back).

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.instance_norm(ndgrad.tensor([[[1.0, 3.0]]]))
    tensor([[[-1.0000,  1.0000]]])
    """
    xs = tuple(input.shape)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    if use_input_stats:
        _verify_spatial(input.shape)
    N, C = xs[0], xs[1]
    x2 = input.reshape((1, N * C) + xs[2:])
    w2 = weight.repeat(N) if weight is not None else None
    b2 = bias.repeat(N) if bias is not None else None
    rm2 = running_mean.repeat(N) if running_mean is not None else None
    rv2 = running_var.repeat(N) if running_var is not None else None
    if input._data.dtype not in _LOWP:
        # torch's instance norm takes running statistics of another dtype (float32 buffers
        # with a float64 input): they are used, and updated, through the input's dtype
        rm2 = rm2.to(input.dtype) if rm2 is not None else None
        rv2 = rv2.to(input.dtype) if rv2 is not None else None
    out = batch_norm(x2, rm2, rv2, w2, b2, use_input_stats, momentum, eps)
    with no_grad():
        if running_mean is not None and rm2 is not None and use_input_stats:
            running_mean.copy_(rm2.reshape(N, C).mean(0))
        if running_var is not None and rv2 is not None and use_input_stats:
            running_var.copy_(rv2.reshape(N, C).mean(0))
    return out.reshape(xs)


def _verify_spatial(shape: Any) -> None:
    n = _prod(tuple(shape)[2:])
    if n == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{shape}")


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Group normalization: the channels split into ``num_groups`` groups, each normalized per
    sample over its channels and spatial dims; per-channel affine.

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.group_norm(ndgrad.tensor([[1.0, 3.0]]), 1)
    tensor([[-1.0000,  1.0000]])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(group_norm, input, num_groups, weight, bias, eps)
        if r is not NotImplemented:
            return r
    xs = tuple(input.shape)
    if len(xs) < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{len(xs)}")
    N, C = xs[0], xs[1]
    G = int(num_groups)
    if G <= 0 or C % G:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(xs)} and num_groups="
                           f"{num_groups}")
    for t, what in ((weight, "weight"), (bias, "bias")):
        if t is not None and (t.dim() != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {what} to be a vector of size equal to the number of "
                               f"channels in input, but got {what} of shape {list(t.shape)} "
                               f"and input of shape {list(xs)}")
    _check_float(input, "GroupNormKernelImpl")
    _check_mixed(input, weight, bias)
    S = _prod(xs[2:])
    lay = ((N, G, C // G, S), (2, 3), (1, G, C // G, 1), (C,))
    return _run(GROUP_NORM, input, weight, bias, lay, (N, G), True, True, eps)[0]


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Local response normalization across channels (PyTorch's composition: the squares
    averaged over a window of ``size`` channels by avg_pool, ``x / (k + alpha*avg)**beta``).

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.local_response_norm(ndgrad.ones(1, 2, 1), 2, alpha=1.0, beta=1.0, k=0.0)
    tensor([[[2.],
             [1.]]])
    """
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input.clone()
    size = int(size)
    xs = tuple(input.shape)
    N, C = xs[0], xs[1]
    sq = (input * input).reshape(N, C, -1)             # (N, C, S)
    # sum over the window [c - size//2, c + (size-1)//2] of zero-padded channels, as a
    # difference of cumulative sums (the average divides by size, padding included)
    pre, post = size // 2, (size - 1) // 2
    from .shape import cat
    zeros_before = sq.new_zeros((N, pre + 1, sq.shape[2]))
    zeros_after = sq.new_zeros((N, post, sq.shape[2]))
    padded = cat([zeros_before, sq, zeros_after], 1)
    cs = padded.cumsum(1)
    win = cs[:, size:, :] - cs[:, :C, :]
    div = (win * (alpha / size) + k).pow(beta).reshape(xs)
    return input / div


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Optional[Tensor] = None) -> Tensor:
    """``input / max(norm_p(input, dim), eps)`` (PyTorch's composition).

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.normalize(ndgrad.tensor([[3.0, 4.0]]))
    tensor([[0.6000, 0.8000]])
    """
    from .linalg import vector_norm
    denom = vector_norm(input, p, dim, True).clamp_min(eps).expand_as(input)
    if out is not None:
        from ..autograd.grad_mode import is_grad_enabled
        if is_grad_enabled() and (input.requires_grad or out.requires_grad):
            raise RuntimeError("div(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        res = input / denom
        if tuple(out.shape) != tuple(res.shape):
            if out._base is not None:
                raise RuntimeError("normalize(): the out= tensor is a view of another shape")
            out._data = np.empty(res._data.shape, out._data.dtype)    # resized, as PyTorch
        return out.copy_(res)
    return input / denom


__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm",
           "local_response_norm", "normalize"]

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = """
batch_norm(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? weight=None, Tensor? bias=None, bool training=False, float momentum=0.1, float eps=1e-05)
instance_norm(Tensor input, Tensor? running_mean=None, Tensor? running_var=None, Tensor? weight=None, Tensor? bias=None, bool use_input_stats=True, float momentum=0.1, float eps=1e-05)
layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)
group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)
rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None)
local_response_norm(Tensor input, int size, float alpha=0.0001, float beta=0.75, float k=1.0)
normalize(Tensor input, float p=2.0, int dim=1, float eps=1e-12, Tensor? out=None)
"""  # noqa: E501
