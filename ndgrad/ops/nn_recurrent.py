"""nn op family: the recurrent cells (one step of an Elman RNN with tanh or relu, an LSTM, a GRU).

Note [Fused recurrent cells]
Each cell step is ONE op: the gate matmuls, the bias additions and the nonlinearities run in
one NumPy forward, which keeps the activated gates for the backward (an argument ``saved`` that
the op fills, saved with the node and released after backward). The VJP has two paths:

* plain backward (grad mode off, unbatched cotangents): the whole step's backward in NumPy from
  the saved gates, a few BLAS calls;
* ``create_graph=True`` or batched cotangents: the same formulas written with ndgrad ops, the
  gates recomputed from the saved inputs with ndgrad ops, so that the backward is itself
  differentiable (second order) and runs under the batching rules.

The JVP is the linearized step written with ndgrad ops. The batching rule runs the op per row.
The layers (``nn.RNN``/``LSTM``/``GRU``) run one op per layer and direction over the whole
sequence instead (Note [Fused recurrent layers] below); for packed sequences they project the
whole input with one ``linear`` first and give the cells ``w_ih=None``: ``input`` is then the
projected input (its bias included), as PyTorch's CPU kernels do.

The public functions take PyTorch's arguments of ``torch.rnn_tanh_cell``, ``torch.lstm_cell``
(``hx`` a pair ``(h, c)``), ``torch.gru_cell``; inputs are 2-D ``(batch, features)``.

Example:
    >>> import ndgrad
    >>> from ndgrad.ops.nn_recurrent import lstm_cell
    >>> x, h, c = ndgrad.ones(2, 3), ndgrad.zeros(2, 4), ndgrad.zeros(2, 4)
    >>> w_ih = ndgrad.ones(16, 3, requires_grad=True)
    >>> h1, c1 = lstm_cell(x, (h, c), w_ih, ndgrad.ones(16, 4))
    >>> h1.shape, h1.grad_fn.name()
    (ndgrad.Size([2, 4]), 'LstmCellBackward0')
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..autograd.grad_mode import _state
from ..tensor import Tensor, _wrap
from . import _dispatch
from ._dispatch import Op, apply
from .linalg import _matmul_fwd
from .products import per_row

__all__: list = []

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional. PyTorch has no cell functions in torch.nn.functional.
SIGNATURES = ""


def _sigmoid(a: np.ndarray) -> np.ndarray:
    r = 0.5 * (np.tanh(0.5 * a) + 1.0)
    return r if r.dtype == a.dtype else r.astype(a.dtype)   # bfloat16 stays bfloat16


# ---------------------------------------------------------------------------- layouts
# A cell op's tensor inputs: input, hx, [cx (lstm)], [w_ih], w_hh, [b_ih], [b_hh].
class _Layout:
    __slots__ = ("kind", "lstm", "wih", "bih", "bhh", "proj", "names", "idx")

    def __init__(self, kind: str, wih: bool, bih: bool, bhh: bool, proj: bool = False) -> None:
        self.kind, self.lstm, self.wih, self.bih, self.bhh = kind, kind == "lstm", wih, bih, bhh
        self.proj = proj        # the LSTM layer's w_hr (proj_size > 0), last
        names = ["input", "hx"] + (["cx"] if self.lstm else []) + (["w_ih"] if wih else []) + \
            ["w_hh"] + (["b_ih"] if bih else []) + (["b_hh"] if bhh else []) + \
            (["w_hr"] if proj else [])
        self.names = tuple(names)
        self.idx = {n: i for i, n in enumerate(names)}

    def split(self, seq: Any) -> dict:
        return {n: seq[i] for n, i in self.idx.items()}


def _gates_np(d: dict, lay: _Layout, ngates: int) -> tuple:
    """(input part, hidden part) of the pre-activation gates, biases included."""
    x, h = d["input"], d["hx"]
    gx = _matmul_fwd(x, d["w_ih"].T) if lay.wih else x   # in x's dtype (bfloat16 too)
    if lay.bih:
        gx = gx + d["b_ih"]
    gh = _matmul_fwd(h, d["w_hh"].T)
    if lay.bhh:
        gh = gh + d["b_hh"]
    return gx, gh


def _gates_t(d: dict, lay: _Layout) -> tuple:
    """The same with ndgrad ops (for the differentiable backward)."""
    x, h = d["input"], d["hx"]
    gx = x.matmul(d["w_ih"].t()) if lay.wih else x
    if lay.bih:
        gx = gx + d["b_ih"]
    gh = h.matmul(d["w_hh"].t())
    if lay.bhh:
        gh = gh + d["b_hh"]
    return gx, gh


def _lin_t(d: dict, td: dict, lay: _Layout) -> tuple:
    """Tangents of the input and hidden parts of the gates (None: zero)."""
    def add(a, b):
        return b if a is None else a if b is None else a + b
    tx, th = td["input"], td["hx"]
    if lay.wih:
        tgx = None if tx is None else tx.matmul(d["w_ih"].t())
        if td["w_ih"] is not None:
            tgx = add(tgx, d["input"].matmul(td["w_ih"].t()))
    else:
        tgx = tx
    if lay.bih:
        tgx = add(tgx, td["b_ih"])
    tgh = None if th is None else th.matmul(d["w_hh"].t())
    if td["w_hh"] is not None:
        tgh = add(tgh, d["hx"].matmul(td["w_hh"].t()))
    if lay.bhh:
        tgh = add(tgh, td["b_hh"])
    return tgx, tgh


def _plain(grads: tuple) -> bool:
    """The NumPy backward applies: no graph to record, no batched cotangent, no trace (the
    tracer records a backward's ops; the NumPy one would be baked into the graph)."""
    if _state.enabled or _dispatch._TRACING:
        return False
    for g in grads:
        if g is not None and (g._blevel or g._bproxy is not None):
            return False
    return True


def _param_grads_np(ctx, lay: _Layout, d: dict, dgx: np.ndarray, dgh: np.ndarray,
                    dh_extra: Optional[np.ndarray]) -> list:
    """Gradients of every input from the gate gradients (NumPy)."""
    need = ctx.needs_input_grad
    out: list = [None] * len(lay.names)
    ix = lay.idx
    if need(0):
        out[0] = _wrap(dgx @ d["w_ih"] if lay.wih else dgx)
    if need(1):
        dh = dgh @ d["w_hh"]
        out[1] = _wrap(dh if dh_extra is None else dh + dh_extra)
    if lay.wih and need(ix["w_ih"]):
        out[ix["w_ih"]] = _wrap(dgx.T @ d["input"])
    if need(ix["w_hh"]):
        out[ix["w_hh"]] = _wrap(dgh.T @ d["hx"])
    if lay.bih and need(ix["b_ih"]):
        out[ix["b_ih"]] = _wrap(dgx.sum(0))
    if lay.bhh and need(ix["b_hh"]):
        out[ix["b_hh"]] = _wrap(dgh.sum(0))
    return out


def _param_grads_t(ctx, lay: _Layout, d: dict, dgx: Tensor, dgh: Tensor,
                   dh_extra: Optional[Tensor]) -> list:
    """The same with ndgrad ops."""
    need = ctx.needs_input_grad
    out: list = [None] * len(lay.names)
    ix = lay.idx
    if need(0):
        out[0] = dgx.matmul(d["w_ih"]) if lay.wih else dgx
    if need(1):
        dh = dgh.matmul(d["w_hh"])
        out[1] = dh if dh_extra is None else dh + dh_extra
    if lay.wih and need(ix["w_ih"]):
        out[ix["w_ih"]] = dgx.t().matmul(d["input"])
    if need(ix["w_hh"]):
        out[ix["w_hh"]] = dgh.t().matmul(d["hx"])
    if lay.bih and need(ix["b_ih"]):
        out[ix["b_ih"]] = dgx.sum(0)
    if lay.bhh and need(ix["b_hh"]):
        out[ix["b_hh"]] = dgh.sum(0)
    return out


def _cat(ts: list) -> Tensor:
    from .shape import cat
    return cat(ts, -1)


def _zeros(like: Tensor) -> Tensor:
    return _wrap(np.zeros(like._data.shape, like._data.dtype))


# ---------------------------------------------------------------------------- Elman RNN
def _rnn_fwd(lay: _Layout):
    relu = lay.kind == "rnn_relu"

    def fwd(*arrs):
        d = lay.split(arrs)
        gx, gh = _gates_np(d, lay, 1)
        pre = gx + gh
        return np.maximum(pre, 0) if relu else np.tanh(pre)
    return fwd


def _rnn_vjp(lay: _Layout):
    relu = lay.kind == "rnn_relu"

    def vjp(ctx, g):
        saved = ctx.saved
        d = lay.split(saved[:-1])
        y = saved[-1]
        if _plain((g,)):
            a = {k: v._data for k, v in d.items()}
            gd = g._data
            dpre = gd * (y._data > 0) if relu else gd * (1 - y._data * y._data)
            return tuple(_param_grads_np(ctx, lay, a, dpre, dpre, None))
        return _rnn_vjp_t(ctx, lay, d, g)
    return vjp


def _rnn_vjp_t(ctx, lay: _Layout, d: dict, g: Tensor) -> tuple:
    """The differentiable VJP of one Elman step (ndgrad ops)."""
    gx, gh = _gates_t(d, lay)
    pre = gx + gh
    if lay.kind == "rnn_relu":
        dpre = g * (pre > 0).to(g.dtype)
    else:
        yt = pre.tanh()
        dpre = g * (1 - yt * yt)
    return tuple(_param_grads_t(ctx, lay, d, dpre, dpre, None))


def _rnn_jvp(lay: _Layout):
    relu = lay.kind == "rnn_relu"

    def jvp(ctx, *tangents):
        d = lay.split(ctx.inputs)
        td = lay.split(tangents)
        tgx, tgh = _lin_t(d, td, lay)
        t = tgx if tgh is None else tgh if tgx is None else tgx + tgh
        if t is None:
            return None
        y = ctx.result
        if relu:
            return t * (y > 0).to(t.dtype)
        return t * (1 - y * y)
    return jvp


# ---------------------------------------------------------------------------- LSTM
def _lstm_fwd(lay: _Layout):
    def fwd(*arrs):
        box = arrs[-1]
        d = lay.split(arrs[:-1])
        gx, gh = _gates_np(d, lay, 4)
        gates = gx + gh
        H = gates.shape[-1] // 4
        act = np.empty_like(gates)
        act[:, :2 * H] = _sigmoid(gates[:, :2 * H])
        act[:, 2 * H:3 * H] = np.tanh(gates[:, 2 * H:3 * H])
        act[:, 3 * H:] = _sigmoid(gates[:, 3 * H:])
        i, f, gg, o = act[:, :H], act[:, H:2 * H], act[:, 2 * H:3 * H], act[:, 3 * H:]
        c1 = f * d["cx"] + i * gg
        tc = np.tanh(c1)
        h1 = o * tc
        box.append((act, tc))
        return h1, c1
    return fwd


def _lstm_acts_t(d: dict, lay: _Layout) -> tuple:
    gx, gh = _gates_t(d, lay)
    gates = gx + gh
    i, f, g, o = gates.chunk(4, -1)
    return i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()


def _lstm_vjp(lay: _Layout):
    def vjp(ctx, gh1, gc1):
        saved = ctx.saved
        d = lay.split(saved[:-1])
        box = saved[-1]
        if _plain((gh1, gc1)):
            act, tc = box[0]
            H = tc.shape[-1]
            i, f, gg, o = act[:, :H], act[:, H:2 * H], act[:, 2 * H:3 * H], act[:, 3 * H:]
            a = {k: v._data for k, v in d.items()}
            dc = np.zeros_like(tc) if gc1 is None else gc1._data.copy()
            dgates = np.empty_like(act)
            if gh1 is not None:
                ghd = gh1._data
                dc += ghd * o * (1 - tc * tc)
                dgates[:, 3 * H:] = ghd * tc * o * (1 - o)
            else:
                dgates[:, 3 * H:] = 0
            dgates[:, :H] = dc * gg * i * (1 - i)
            dgates[:, H:2 * H] = dc * a["cx"] * f * (1 - f)
            dgates[:, 2 * H:3 * H] = dc * i * (1 - gg * gg)
            out = _param_grads_np(ctx, lay, a, dgates, dgates, None)
            if ctx.needs_input_grad(2):
                out[2] = _wrap(dc * f)
            return tuple(out)
        return _lstm_vjp_t(ctx, lay, d, gh1, gc1)
    return vjp


def _lstm_vjp_t(ctx, lay: _Layout, d: dict, gh1: Optional[Tensor],
                gc1: Optional[Tensor]) -> tuple:
    """The differentiable VJP of one LSTM step (ndgrad ops)."""
    i, f, g, o = _lstm_acts_t(d, lay)
    c = d["cx"]
    tc = (f * c + i * g).tanh()
    dc = gc1
    if gh1 is not None:
        t = gh1 * o * (1 - tc * tc)
        dc = t if dc is None else dc + t
        do = gh1 * tc
    else:
        do = _zeros(tc)
    if dc is None:
        dc = _zeros(tc)
    dgates = _cat([dc * g * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - g * g),
                   do * o * (1 - o)])
    out = _param_grads_t(ctx, lay, d, dgates, dgates, None)
    if ctx.needs_input_grad(2):
        out[2] = dc * f
    return tuple(out)


def _lstm_jvp(lay: _Layout):
    def jvp(ctx, *tangents):
        tangents = tangents[:len(lay.names)]
        d = lay.split(ctx.inputs)
        td = lay.split(tangents)
        tgx, tgh = _lin_t(d, td, lay)
        tg = tgx if tgh is None else tgh if tgx is None else tgx + tgh
        tcx = td["cx"]
        if tg is None and tcx is None:
            return None
        i, f, g, o = _lstm_acts_t(d, lay)
        c = d["cx"]
        c1 = f * c + i * g
        tc1 = None if tcx is None else f * tcx
        if tg is not None:
            ti, tf, tgg, to = tg.chunk(4, -1)
            ti, tf = ti * i * (1 - i), tf * f * (1 - f)
            tgg, to = tgg * (1 - g * g), to * o * (1 - o)
            t = tf * c + ti * g + i * tgg
            tc1 = t if tc1 is None else tc1 + t
        tanc = c1.tanh()
        th1 = o * (1 - tanc * tanc) * tc1
        if tg is not None:
            th1 = th1 + to * tanc
        return th1, tc1
    return jvp


# ---------------------------------------------------------------------------- GRU
def _gru_fwd(lay: _Layout):
    def fwd(*arrs):
        box = arrs[-1]
        d = lay.split(arrs[:-1])
        gx, gh = _gates_np(d, lay, 3)
        H = gh.shape[-1] // 3
        rz = _sigmoid(gx[:, :2 * H] + gh[:, :2 * H])
        r, z = rz[:, :H], rz[:, H:]
        ghn = gh[:, 2 * H:]
        n = np.tanh(gx[:, 2 * H:] + r * ghn)
        h = d["hx"]
        box.append((r, z, n, ghn))
        return n + z * (h - n)
    return fwd


def _gru_parts_t(d: dict, lay: _Layout) -> tuple:
    gx, gh = _gates_t(d, lay)
    xr, xz, xn = gx.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return r, z, n, hn


def _gru_vjp(lay: _Layout):
    def vjp(ctx, g):
        saved = ctx.saved
        d = lay.split(saved[:-1])
        box = saved[-1]
        if _plain((g,)):
            r, z, n, ghn = box[0]
            a = {k: v._data for k, v in d.items()}
            gd = g._data
            H = r.shape[-1]
            dn = gd * (1 - z) * (1 - n * n)
            dgx = np.empty(r.shape[:-1] + (3 * H,), r.dtype)
            dr = dn * ghn * r * (1 - r)
            dgx[:, :H] = dr
            dgx[:, H:2 * H] = gd * (a["hx"] - n) * z * (1 - z)
            dgx[:, 2 * H:] = dn
            dgh = dgx.copy()
            dgh[:, 2 * H:] = dn * r
            return tuple(_param_grads_np(ctx, lay, a, dgx, dgh, gd * z))
        return _gru_vjp_t(ctx, lay, d, g)
    return vjp


def _gru_vjp_t(ctx, lay: _Layout, d: dict, g: Tensor) -> tuple:
    """The differentiable VJP of one GRU step (ndgrad ops)."""
    r, z, n, hn = _gru_parts_t(d, lay)
    h = d["hx"]
    dn = g * (1 - z) * (1 - n * n)
    dr = dn * hn * r * (1 - r)
    dz = g * (h - n) * z * (1 - z)
    dgx = _cat([dr, dz, dn])
    dgh = _cat([dr, dz, dn * r])
    return tuple(_param_grads_t(ctx, lay, d, dgx, dgh, g * z))


def _gru_jvp(lay: _Layout):
    def jvp(ctx, *tangents):
        tangents = tangents[:len(lay.names)]
        d = lay.split(ctx.inputs)
        td = lay.split(tangents)
        tgx, tgh = _lin_t(d, td, lay)
        th = td["hx"]
        if tgx is None and tgh is None and th is None:
            return None
        r, z, n, hn = _gru_parts_t(d, lay)
        h = d["hx"]
        z3 = [None, None, None]
        xr, xz, xn = tgx.chunk(3, -1) if tgx is not None else z3
        hr, hz, hnt = tgh.chunk(3, -1) if tgh is not None else z3

        def add(a, b):
            return b if a is None else a if b is None else a + b
        sr, sz = add(xr, hr), add(xz, hz)
        tr = None if sr is None else sr * r * (1 - r)
        tz = None if sz is None else sz * z * (1 - z)
        sn = xn
        if tr is not None:
            sn = add(sn, tr * hn)
        if hnt is not None:
            sn = add(sn, r * hnt)
        tn = None if sn is None else sn * (1 - n * n)
        # h' = n + z * (h - n) = (1 - z) * n + z * h
        out = None if tn is None else tn * (1 - z)
        if tz is not None:
            out = add(out, tz * (h - n))
        if th is not None:
            out = add(out, z * th)
        return out
    return jvp


# ---------------------------------------------------------------------------- op table
_NODES = {"rnn_tanh": "RnnTanhCellBackward0", "rnn_relu": "RnnReluCellBackward0",
          "lstm": "LstmCellBackward0", "gru": "GruCellBackward0"}
_OPS: dict = {}


def _op(kind: str, wih: bool, bih: bool, bhh: bool) -> Op:
    key = (kind, wih, bih, bhh)
    op = _OPS.get(key)
    if op is not None:
        return op
    lay = _Layout(kind, wih, bih, bhh)
    name, node = kind + "_cell", _NODES[kind]
    if kind in ("rnn_tanh", "rnn_relu"):
        op = Op(name, node, _rnn_fwd(lay), _rnn_vjp(lay), inputs=lay.names,
                saves=lay.names + ("result",), jvp=_rnn_jvp(lay))
    elif kind == "lstm":
        op = Op(name, node, _lstm_fwd(lay), _lstm_vjp(lay), inputs=lay.names, args=("saved",),
                saves=lay.names + ("saved",), jvp=_lstm_jvp(lay), num_outputs=2)
    else:
        op = Op(name, node, _gru_fwd(lay), _gru_vjp(lay), inputs=lay.names, args=("saved",),
                saves=lay.names + ("saved",), jvp=_gru_jvp(lay))
    _OPS[key] = op
    _register(op)
    return op


def _register(op: Op) -> None:
    from ._batching import RULES
    RULES[op] = per_row


def _check(input: Tensor, hs: tuple, w_ih: Optional[Tensor], w_hh: Tensor, ngates: int,
           name: str) -> None:
    """PyTorch's checks of the cell functions (2-D input and states)."""
    if input.ndim != 2 or any(h.ndim != 2 for h in hs):
        raise RuntimeError(f"{name}: expected input and hidden states to be 2-D, got "
                           f"{input.ndim}-D and {hs[0].ndim}-D")
    if w_ih is not None and input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    H = w_hh.shape[1]
    for i, h in enumerate(hs):
        if input.shape[0] != h.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{i} "
                               f"batch size {h.shape[0]}")
        want = H if i == 0 else w_hh.shape[0] // ngates
        if h.shape[1] != want:
            raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {want}")
    if w_hh.shape[0] % ngates:
        raise RuntimeError(f"{name}: weight_hh has {w_hh.shape[0]} rows, not a multiple of "
                           f"{ngates}")


def _call(kind: str, input: Tensor, hs: tuple, w_ih: Optional[Tensor], w_hh: Tensor,
          b_ih: Optional[Tensor], b_hh: Optional[Tensor]) -> Any:
    op = _op(kind, w_ih is not None, b_ih is not None, b_hh is not None)
    tensors = (input,) + hs + tuple(t for t in (w_ih, w_hh, b_ih, b_hh) if t is not None)
    arrays = tuple(t._data for t in tensors)
    args: tuple = ([],) if kind in ("lstm", "gru") else ()
    return apply(op, tensors, arrays, args)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Optional[Tensor], w_hh: Tensor,
                  b_ih: Optional[Tensor] = None, b_hh: Optional[Tensor] = None) -> Tensor:
    """``tanh(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)`` as one op (``w_ih=None``: ``input``
    is already projected)."""
    _check(input, (hx,), w_ih, w_hh, 1, "rnn_tanh_cell")
    return _call("rnn_tanh", input, (hx,), w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Optional[Tensor], w_hh: Tensor,
                  b_ih: Optional[Tensor] = None, b_hh: Optional[Tensor] = None) -> Tensor:
    """``relu(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)`` as one op."""
    _check(input, (hx,), w_ih, w_hh, 1, "rnn_relu_cell")
    return _call("rnn_relu", input, (hx,), w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input: Tensor, hx: Any, w_ih: Optional[Tensor], w_hh: Tensor,
              b_ih: Optional[Tensor] = None, b_hh: Optional[Tensor] = None) -> tuple:
    """One LSTM step (gates i, f, g, o in PyTorch's order) as one op: returns ``(h1, c1)``."""
    h, c = hx
    _check(input, (h, c), w_ih, w_hh, 4, "lstm_cell")
    return _call("lstm", input, (h, c), w_ih, w_hh, b_ih, b_hh)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Optional[Tensor], w_hh: Tensor,
             b_ih: Optional[Tensor] = None, b_hh: Optional[Tensor] = None) -> Tensor:
    """One GRU step (gates r, z, n in PyTorch's order) as one op."""
    _check(input, (hx,), w_ih, w_hh, 3, "gru_cell")
    return _call("gru", input, (hx,), w_ih, w_hh, b_ih, b_hh)


# ---------------------------------------------------------------------------- sequence ops
# Note [Fused recurrent layers]
# ``nn.RNN``/``LSTM``/``GRU`` run one op per (layer, direction) over the whole sequence, not one
# cell op per step. Its inputs are the cell's (input, hx, [cx], w_ih, w_hh, [b_ih, b_hh]) with
# ``input`` the (T, B, I) sequence; its outputs the states of all steps (T, B, H), the last
# state and, for the LSTM, the last cell state (PyTorch's CPU LSTM layer op has the same).
# The forward projects the whole input with ONE GEMM, then loops the steps in NumPy in a
# (features, batch) layout (``w_hh @ h``: a (G*H, H) x (H, B) GEMM per step, twice as fast as
# ``h @ w_hh.T`` with B small on two BLAS threads), into preallocated (T, ...) buffers (the
# activated gates, the states) that the ``saved`` list keeps for the backward. The plain
# backward (Note [Fused recurrent cells]) precomputes the gates' local derivatives for all
# steps at once, loops the steps in reverse with one GEMM each for the recurrence, and gets
# the gate gradients of all steps as one (T, B, G*H) array: d(input), dW_ih and dW_hh are then
# ONE GEMM each over the stacked steps, the bias gradients one sum. The differentiable backward
# (create_graph, batched cotangents) and the JVP compose the cells' per-step ndgrad formulas
# over the sequence (the states recomputed with the cell ops), so second order, vmap and
# forward AD behave as with one cell op per step. The sigmoid is 0.5 * tanh(0.5 x) + 0.5 as
# in the cells, with the 0.5 folded into the gate rows of the weights (exact: a power of two),
# and the biases are added to the projection once (except GRU's b_hn, which r multiplies):
# the values agree with the per-step cells to rounding. The LSTM's projection (``proj_size``)
# is one more (P, H) x (H, B) GEMM per step inside the op. Packed sequences run the cells.
_LAYER_NODES = {"rnn_tanh": "RnnTanhLayerBackward0", "rnn_relu": "RnnReluLayerBackward0",
                "lstm": "MkldnnRnnLayerBackward0", "gru": "GruLayerBackward0"}
_LAYER_OPS: dict = {}


def _steps(T: int, reverse: bool) -> list:
    """``(t, src, dst)`` per time step, in the pass's order: step ``t`` reads the state
    ``S[src]`` and writes ``S[dst]`` of a ``(T + 1)``-long state buffer whose initial state is
    ``S[T]`` in reverse and ``S[0]`` forward (the last one written is ``S[_last(T, reverse)]``)."""
    if reverse:
        return [(t, t + 1, t) for t in range(T - 1, -1, -1)]
    return [(t, t, t + 1) for t in range(T)]


def _last(T: int, reverse: bool) -> int:
    """The index of the final state in a state buffer of :func:`_steps`."""
    return 0 if reverse else T


def _time_views(S: np.ndarray, reverse: bool) -> tuple:
    """(states of the steps, previous states) by time index of a (T + 1, ...) state buffer:
    forward runs keep the initial state at 0, reverse ones at T."""
    return (S[:-1], S[1:]) if reverse else (S[1:], S[:-1])


def _tcopy(a: np.ndarray) -> np.ndarray:
    """``a`` (T, X, Y) copied into a fresh C-contiguous (T, Y, X) array."""
    out = np.empty((a.shape[0], a.shape[2], a.shape[1]), a.dtype)
    np.copyto(out, a.transpose(0, 2, 1))
    return out


def _project(d: dict, lay: _Layout, scale: Optional[np.ndarray],
             bias: Optional[np.ndarray]) -> np.ndarray:
    """``scale * (input @ w_ih.T) + bias`` of all steps as (T, G, B): one GEMM."""
    x, w = d["input"], d["w_ih"]
    T, B, In = x.shape
    G = w.shape[0]
    if scale is not None:
        w = w * scale
    p = x.reshape(T * B, In) @ w.T
    if bias is not None:
        p += bias
    return _tcopy(p.reshape(T, B, G))


def _lstm_layer_fwd(lay: _Layout):
    def fwd(*arrs):
        d = lay.split(arrs)
        reverse, box = arrs[-2], arrs[-1]
        w_hh = d["w_hh"]
        G = w_hh.shape[0]
        H = G // 4
        P = w_hh.shape[1]                      # the state's size (proj_size, else H)
        dt = w_hh.dtype
        scale = np.full((G, 1), 0.5, dt)
        scale[2 * H:3 * H] = 1
        shift = np.full((G, 1), 0.5, dt)
        shift[2 * H:3 * H] = 0
        bias = (d["b_ih"] + d["b_hh"]) * scale[:, 0] if lay.bhh else None
        act = _project(d, lay, scale, bias)    # pre-activations, activated in place per step
        T, _, B = act.shape
        ws = w_hh * scale
        w_hr = d["w_hr"] if lay.proj else None
        S = np.empty((T + 1, P, B), dt)
        C = np.empty((T + 1, H, B), dt)
        tcs = np.empty((T, H, B), dt)
        HR = np.empty((T, H, B), dt) if lay.proj else None     # o * tanh(c) before w_hr
        first = T if reverse else 0
        S[first], C[first] = d["hx"].T, d["cx"].T
        tmp = np.empty((G, B), dt)
        ig = np.empty((H, B), dt)
        for t, prev, nxt in _steps(T, reverse):
            a = act[t]
            np.matmul(ws, S[prev], out=tmp)
            a += tmp
            np.tanh(a, out=a)
            a *= scale
            a += shift
            c = C[nxt]
            np.multiply(a[H:2 * H], C[prev], out=c)
            np.multiply(a[:H], a[2 * H:3 * H], out=ig)
            c += ig
            tc = tcs[t]
            np.tanh(c, out=tc)
            if w_hr is None:
                np.multiply(a[3 * H:], tc, out=S[nxt])
            else:
                np.multiply(a[3 * H:], tc, out=HR[t])
                np.matmul(w_hr, HR[t], out=S[nxt])
        Sb = _tcopy(S)
        box.append((act, tcs, C, Sb, HR))
        last = _last(T, reverse)
        return _time_views(Sb, reverse)[0].copy(), Sb[last].copy(), C[last].T.copy()
    return fwd


def _grads_np(ctx, lay: _Layout, dgx: np.ndarray, dgh: Optional[np.ndarray], Sb: np.ndarray,
              dh0: np.ndarray, dc0: Optional[np.ndarray]) -> tuple:
    """Every input's gradient from the gate gradients of all steps (T, B, G) (``dgh`` None:
    the same as ``dgx``) and the initial states' (H, B) gradients."""
    saved = ctx.saved
    ix = lay.idx
    need = ctx.needs_input_grad
    T, B, G = dgx.shape
    H = Sb.shape[-1]
    x = saved[0]._data
    dgx2 = dgx.reshape(T * B, G)
    dgh2 = dgx2 if dgh is None else dgh.reshape(T * B, G)
    out: list = [None] * len(lay.names)
    if need(0):
        out[0] = _wrap((dgx2 @ saved[ix["w_ih"]]._data).reshape(x.shape))
    if need(1):
        out[1] = _wrap(np.ascontiguousarray(dh0.T))
    if dc0 is not None and need(2):
        out[2] = _wrap(np.ascontiguousarray(dc0.T))
    if need(ix["w_ih"]):
        out[ix["w_ih"]] = _wrap(dgx2.T @ x.reshape(T * B, x.shape[-1]))
    if need(ix["w_hh"]):
        Sprev = _time_views(Sb, _reverse_of(ctx))[1]
        out[ix["w_hh"]] = _wrap(dgh2.T @ Sprev.reshape(T * B, H))
    if lay.bih:
        ib, hb = ix["b_ih"], ix["b_hh"]
        gi = dgx2.sum(0)
        if need(ib):
            out[ib] = _wrap(gi)
        if need(hb):
            out[hb] = _wrap(dgh2.sum(0) if dgh is not None else gi.copy() if need(ib) else gi)
    return tuple(out)


def _lstm_layer_bwd_np(ctx, lay: _Layout, gout, ghn, gcn) -> tuple:
    saved = ctx.saved
    w_hh = saved[lay.idx["w_hh"]]._data
    act, tcs, C, Sb, HR = saved[-1][0]
    reverse = _reverse_of(ctx)
    T, G, B = act.shape
    H = G // 4
    P = Sb.shape[-1]
    dt = act.dtype
    A4 = act.reshape(T, 4, H, B)
    i, f, g, o = A4[:, 0], A4[:, 1], A4[:, 2], A4[:, 3]
    # the gates' local derivatives of all steps: dgates = (dc, dc, dc, dh) * K
    K = np.empty((T, 4, H, B), dt)
    for k, s, m in ((0, i, g), (1, f, _time_views(C, reverse)[1]), (3, o, tcs)):
        Kk = K[:, k]
        np.subtract(1, s, out=Kk)
        Kk *= s
        Kk *= m
    Kk = K[:, 2]
    np.multiply(g, g, out=Kk)
    np.subtract(1, Kk, out=Kk)
    Kk *= i
    Ah = tcs * tcs                          # dc += dh * Ah
    np.subtract(1, Ah, out=Ah)
    Ah *= o
    D = np.empty((T, 4, H, B), dt)
    goT = None if gout is None else _tcopy(gout)
    dh_next = np.zeros((P, B), dt) if ghn is None else ghn.T
    dc_next = np.zeros((H, B), dt) if gcn is None else gcn.T
    wT = np.ascontiguousarray(w_hh.T)
    dc = np.empty((H, B), dt)
    if HR is not None:
        w_hr = saved[lay.idx["w_hr"]]._data
        wrT = np.ascontiguousarray(w_hr.T)
        DP = np.empty((T, P, B), dt)           # the projected states' gradients
    for t in (range(T) if reverse else range(T - 1, -1, -1)):
        dh = dh_next if goT is None else goT[t] + dh_next
        if HR is not None:
            DP[t] = dh
            dh = wrT @ dh
        np.multiply(dh, Ah[t], out=dc)
        dc += dc_next
        Dt = D[t]
        np.multiply(dc, K[t, :3], out=Dt[:3])
        np.multiply(dh, K[t, 3], out=Dt[3])
        dc_next = dc * f[t]
        dh_next = wT @ Dt.reshape(G, B)
    out = _grads_np(ctx, lay, _tcopy(D.reshape(T, G, B)), None, Sb, dh_next, dc_next)
    if HR is not None and ctx.needs_input_grad(lay.idx["w_hr"]):
        out = out[:-1] + (_wrap(_tcopy(DP).reshape(T * B, P).T
                                @ _tcopy(HR).reshape(T * B, H)),)
    return out


def _gru_layer_fwd(lay: _Layout):
    def fwd(*arrs):
        d = lay.split(arrs)
        reverse, box = arrs[-2], arrs[-1]
        w_hh = d["w_hh"]
        G, H = w_hh.shape
        dt = w_hh.dtype
        half = np.asarray(0.5, dt)
        scale = np.ones((G, 1), dt)
        scale[:2 * H] = half
        bias = bn = None
        if lay.bhh:
            bias = d["b_ih"] * scale[:, 0]
            bias[:2 * H] += d["b_hh"][:2 * H] * half
            bn = d["b_hh"][2 * H:].reshape(H, 1)
        gxT = _project(d, lay, scale, bias)    # (T, 3H, B); r, z activated in place
        T, _, B = gxT.shape
        rz, gxn = gxT[:, :2 * H], gxT[:, 2 * H:]
        ws = w_hh * scale
        S = np.empty((T + 1, H, B), dt)
        N = np.empty((T, H, B), dt)
        GHN = np.empty((T, H, B), dt)
        first = T if reverse else 0
        S[first] = d["hx"].T
        tmp = np.empty((G, B), dt)
        dd = np.empty((H, B), dt)
        for t, prev, nxt in _steps(T, reverse):
            np.matmul(ws, S[prev], out=tmp)
            ghn = GHN[t]
            if bn is not None:
                np.add(tmp[2 * H:], bn, out=ghn)
            else:
                ghn[...] = tmp[2 * H:]
            a = rz[t]
            a += tmp[:2 * H]
            np.tanh(a, out=a)
            a *= half
            a += half
            n = N[t]
            np.multiply(a[:H], ghn, out=n)
            n += gxn[t]
            np.tanh(n, out=n)
            np.subtract(S[prev], n, out=dd)
            dd *= a[H:]
            np.add(n, dd, out=S[nxt])
        Sb = _tcopy(S)
        box.append((rz, N, GHN, S, Sb))
        return _time_views(Sb, reverse)[0].copy(), Sb[_last(T, reverse)].copy()
    return fwd


def _gru_layer_bwd_np(ctx, lay: _Layout, gout, ghn_) -> tuple:
    saved = ctx.saved
    w_hh = saved[lay.idx["w_hh"]]._data
    rz, N, GHN, S, Sb = saved[-1][0]
    reverse = _reverse_of(ctx)
    T, H, B = N.shape
    G = 3 * H
    dt = N.dtype
    r, z = rz[:, :H], rz[:, H:]
    KX = np.empty((T, 3, H, B), dt)
    Kn = KX[:, 2]
    np.multiply(1 - z, 1 - N * N, out=Kn)
    np.multiply(Kn * GHN, r * (1 - r), out=KX[:, 0])
    np.multiply(_time_views(S, reverse)[1] - N, z * (1 - z), out=KX[:, 1])
    KH = KX.copy()
    KH[:, 2] *= r
    DH = np.empty((T, H, B), dt)
    dgh = np.empty((T, 3, H, B), dt)
    goT = None if gout is None else _tcopy(gout)
    dh_next = np.zeros((H, B), dt) if ghn_ is None else ghn_.T
    wT = np.ascontiguousarray(w_hh.T)
    for t in (range(T) if reverse else range(T - 1, -1, -1)):
        dh = DH[t]
        if goT is None:
            dh[...] = dh_next
        else:
            np.add(goT[t], dh_next, out=dh)
        Dt = dgh[t]
        np.multiply(dh, KH[t], out=Dt)
        dh_next = wT @ Dt.reshape(G, B)
        dh_next += dh * z[t]
    KX *= DH[:, None]
    return _grads_np(ctx, lay, _tcopy(KX.reshape(T, G, B)), _tcopy(dgh.reshape(T, G, B)), Sb,
                     dh_next, None)


def _rnn_layer_fwd(lay: _Layout):
    relu = lay.kind == "rnn_relu"

    def fwd(*arrs):
        d = lay.split(arrs)
        reverse, box = arrs[-2], arrs[-1]
        w_hh = d["w_hh"]
        H = w_hh.shape[0]
        dt = w_hh.dtype
        pre = _project(d, lay, None, d["b_ih"] + d["b_hh"] if lay.bhh else None)
        T, _, B = pre.shape
        S = np.empty((T + 1, H, B), dt)
        first = T if reverse else 0
        S[first] = d["hx"].T
        tmp = np.empty((H, B), dt)
        for t, prev, nxt in _steps(T, reverse):
            np.matmul(w_hh, S[prev], out=tmp)
            s = S[nxt]
            np.add(pre[t], tmp, out=s)
            if relu:
                np.maximum(s, 0, out=s)
            else:
                np.tanh(s, out=s)
        Sb = _tcopy(S)
        box.append((S, Sb))
        return _time_views(Sb, reverse)[0].copy(), Sb[_last(T, reverse)].copy()
    return fwd


def _rnn_layer_bwd_np(ctx, lay: _Layout, gout, ghn) -> tuple:
    saved = ctx.saved
    w_hh = saved[lay.idx["w_hh"]]._data
    S, Sb = saved[-1][0]
    reverse = _reverse_of(ctx)
    Y = _time_views(S, reverse)[0]
    T, H, B = Y.shape
    dt = Y.dtype
    K = (Y > 0).astype(dt) if lay.kind == "rnn_relu" else 1 - Y * Y
    D = np.empty((T, H, B), dt)
    goT = None if gout is None else _tcopy(gout)
    dh_next = np.zeros((H, B), dt) if ghn is None else ghn.T
    wT = np.ascontiguousarray(w_hh.T)
    for t in (range(T) if reverse else range(T - 1, -1, -1)):
        Dt = D[t]
        if goT is None:
            np.multiply(dh_next, K[t], out=Dt)
        else:
            np.add(goT[t], dh_next, out=Dt)
            Dt *= K[t]
        dh_next = wT @ Dt
    return _grads_np(ctx, lay, _tcopy(D), None, Sb, dh_next, None)


def _reverse_of(ctx) -> bool:
    return bool(ctx.saved[len(ctx.saved) - 2])


class _StepCtx:
    """What a cell's ndgrad-ops VJP reads of its node, for one step of a layer."""
    __slots__ = ()

    @staticmethod
    def needs_input_grad(i: int) -> bool:
        return True


def _cell_layout(lay: _Layout) -> _Layout:
    """The layout of the cell op a layer's step is (the layer's without ``w_hr``)."""
    return _Layout(lay.kind, True, lay.bih, lay.bhh)


def _run_states(lay: _Layout, d: dict, reverse: bool) -> tuple:
    """The cell inputs of every step ({time: {name: tensor}}, with the step's new states as
    "out" and "c_out", and the LSTM's state before its projection as "hf"), the states
    recomputed with the cell ops; and the order the steps run in."""
    x = d["input"]
    T = x.shape[0]
    order = range(T - 1, -1, -1) if reverse else range(T)
    cell = _op(lay.kind, True, lay.bih, lay.bhh)
    names = _cell_layout(lay).names
    h = d["hx"]
    c = d.get("cx")
    steps: dict = {}
    scratch = lay.kind in ("lstm", "gru")
    for t in order:
        sd = dict(d)
        sd["input"], sd["hx"] = x[t], h
        if lay.lstm:
            sd["cx"] = c
        ts = tuple(sd[n] for n in names)
        res = apply(cell, ts, tuple(v._data for v in ts), ([],) if scratch else ())
        if lay.lstm:
            h, c = res
            sd["hf"], sd["c_out"] = h, c
            if lay.proj:
                h = h.matmul(d["w_hr"].t())
        else:
            h = res
        sd["out"] = h
        steps[t] = sd
    return steps, order


_STEP_VJP = {"lstm": _lstm_vjp_t, "gru": _gru_vjp_t, "rnn_tanh": _rnn_vjp_t,
             "rnn_relu": _rnn_vjp_t}


def _layer_vjp(lay: _Layout):
    step_vjp = _STEP_VJP[lay.kind]
    cell_lay = _cell_layout(lay)
    params = [n for n in cell_lay.names if n not in ("input", "hx", "cx")]

    def vjp(ctx, gout, ghn, *gcn):
        gc = gcn[0] if gcn else None
        if _plain((gout, ghn, gc)):
            go = None if gout is None else gout._data
            gh = None if ghn is None else ghn._data
            if lay.lstm:
                return _lstm_layer_bwd_np(ctx, lay, go, gh, None if gc is None else gc._data)
            if lay.kind == "gru":
                return _gru_layer_bwd_np(ctx, lay, go, gh)
            return _rnn_layer_bwd_np(ctx, lay, go, gh)
        d = lay.split(ctx.saved[:-2])
        steps, order = _run_states(lay, d, _reverse_of(ctx))
        T = d["input"].shape[0]
        dxs: list = [None] * T
        acc: dict = {}
        dh, dc = ghn, gc
        sc = _StepCtx()

        def add(n, v):
            acc[n] = v if n not in acc else acc[n] + v
        for t in reversed(order):
            if gout is not None:
                dh = gout[t] if dh is None else gout[t] + dh
            if dh is None and dc is None:
                continue
            if lay.lstm:
                if lay.proj and dh is not None:
                    add("w_hr", dh.t().matmul(steps[t]["hf"]))
                    dh = dh.matmul(d["w_hr"])
                g = step_vjp(sc, cell_lay, steps[t], dh, dc)
                dc = g[2]
            else:
                g = step_vjp(sc, cell_lay, steps[t], dh)
            dxs[t], dh = g[0], g[1]
            for n in params:
                add(n, g[cell_lay.idx[n]])
        out: list = [None] * len(lay.names)
        if all(v is None for v in dxs):
            return tuple(out)
        from .shape import stack
        if ctx.needs_input_grad(0):
            z = next(v for v in dxs if v is not None)
            out[0] = stack([v if v is not None else z * 0 for v in dxs], 0)
        out[1] = dh
        if lay.lstm:
            out[2] = dc
        for n, v in acc.items():
            if ctx.needs_input_grad(lay.idx[n]):
                out[lay.idx[n]] = v
        return tuple(out)
    return vjp


class _StepJvpCtx:
    __slots__ = ("inputs", "result")

    def __init__(self, inputs: tuple, result: Any) -> None:
        self.inputs, self.result = inputs, result


def _layer_jvp(lay: _Layout):
    cell_lay = _cell_layout(lay)
    step_jvp = {"lstm": _lstm_jvp, "gru": _gru_jvp}.get(lay.kind, _rnn_jvp)(cell_lay)

    def jvp(ctx, *tangents):
        tangents = tangents[:len(lay.names)]
        if all(t is None for t in tangents):
            return None
        d = lay.split(ctx.inputs)
        td = lay.split(tangents)
        steps, order = _run_states(lay, d, bool(ctx._args[0]))
        T = d["input"].shape[0]
        th, tc = td["hx"], td.get("cx")
        tx = td["input"]
        outs: list = [None] * T
        for t in order:
            sd = steps[t]
            tin = dict(td)
            tin["input"], tin["hx"] = (None if tx is None else tx[t]), th
            if lay.lstm:
                tin["cx"] = tc
            r = step_jvp(_StepJvpCtx(tuple(sd[n] for n in cell_lay.names), sd["out"]),
                         *(tin[n] for n in cell_lay.names))
            if lay.lstm:
                th, tc = (None, None) if r is None else r
                if lay.proj:
                    th = None if th is None else th.matmul(d["w_hr"].t())
                    if td["w_hr"] is not None:
                        t2 = sd["hf"].matmul(td["w_hr"].t())
                        th = t2 if th is None else th + t2
            else:
                th = r
            outs[t] = th
        from .shape import stack
        last = steps[order[-1]]
        tout = stack([v if v is not None else _zeros(last["out"]) for v in outs], 0)
        thn = th if th is not None else _zeros(last["out"])
        if lay.lstm:
            return tout, thn, tc if tc is not None else _zeros(last["c_out"])
        return tout, thn
    return jvp


def _layer_op(kind: str, bias: bool, proj: bool) -> Op:
    key = (kind, bias, proj)
    op = _LAYER_OPS.get(key)
    if op is not None:
        return op
    lay = _Layout(kind, True, bias, bias, proj)
    fwd = {"lstm": _lstm_layer_fwd, "gru": _gru_layer_fwd}.get(kind, _rnn_layer_fwd)(lay)
    op = Op(kind + "_layer", _LAYER_NODES[kind], fwd, _layer_vjp(lay), inputs=lay.names,
            args=("reverse", "saved"), saves=lay.names + ("reverse", "saved"),
            jvp=_layer_jvp(lay), num_outputs=3 if lay.lstm else 2)
    from ._batching import RULES
    RULES[op] = per_row
    _LAYER_OPS[key] = op
    return op


def recurrent_layer(kind: str, input: Tensor, hx: Tensor, cx: Optional[Tensor], w_ih: Tensor,
                    w_hh: Tensor, b_ih: Optional[Tensor], b_hh: Optional[Tensor],
                    reverse: bool = False, w_hr: Optional[Tensor] = None) -> tuple:
    """One recurrent layer in one direction over a whole (T, B, I) sequence, as one op (Note
    [Fused recurrent layers]): ``(outputs (T, B, H), h_n[, c_n])``. ``kind`` is ``"lstm"``,
    ``"gru"``, ``"rnn_tanh"`` or ``"rnn_relu"``; ``cx`` and the projection ``w_hr`` (the
    state is then ``(o * tanh(c)) @ w_hr.T``) only for the LSTM; both biases or none.

    Example:
        >>> import ndgrad
        >>> from ndgrad.ops.nn_recurrent import recurrent_layer
        >>> x, h = ndgrad.ones(5, 2, 3), ndgrad.zeros(2, 4)
        >>> w_ih = ndgrad.ones(12, 3, requires_grad=True)
        >>> out, h_n = recurrent_layer("gru", x, h, None, w_ih, ndgrad.ones(12, 4), None, None)
        >>> out.shape, out.grad_fn.name()
        (ndgrad.Size([5, 2, 4]), 'GruLayerBackward0')
    """
    if (b_ih is None) != (b_hh is None):
        raise ValueError("recurrent_layer: give both biases or neither")
    tensors: list = [input, hx] + ([cx] if cx is not None else []) + [w_ih, w_hh]
    if b_ih is not None:
        tensors += [b_ih, b_hh]
    if w_hr is not None:
        tensors.append(w_hr)
    op = _layer_op(kind, b_ih is not None, w_hr is not None)
    return apply(op, tuple(tensors), tuple(t._data for t in tensors), (bool(reverse), []))
