"""Recurrent cells, RNN/LSTM/GRU layers and packed sequences against PyTorch (float64)."""

# ruff: noqa: B023  (the lambdas are called within the loop iteration that makes them)

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

import ndgrad
import ndgrad.autograd.forward_ad as fwAD
import ndgrad.nn as nn
from ndgrad.nn.utils import rnn as nrnn
from ndgrad.ops import nn_recurrent as cells
from tests.nn_compare import assert_close, check_module, copy_state

D = torch.float64


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------- cell ops
_TORCH_CELLS = {"rnn_tanh": torch.rnn_tanh_cell, "rnn_relu": torch.rnn_relu_cell,
                "lstm": torch.lstm_cell, "gru": torch.gru_cell}
_GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}


def _cell_case(kind, wih, bias, seed=0):
    rng = _rng(seed)
    B, In, H, G = 3, 4, 5, _GATES[kind] * 5
    arrs = [rng.standard_normal((B, In if wih else G)), rng.standard_normal((B, H))]
    if kind == "lstm":
        arrs.append(rng.standard_normal((B, H)))
    if wih:
        arrs.append(rng.standard_normal((G, In)))
    arrs.append(rng.standard_normal((G, H)))
    if bias:
        arrs += [rng.standard_normal(G), rng.standard_normal(G)]

    def run(lib, ts):
        it = iter(ts)
        x, h = next(it), next(it)
        c = next(it) if kind == "lstm" else None
        wi = next(it) if wih else None
        wh = next(it)
        bi, bh = (next(it), next(it)) if bias else (None, None)
        if lib is torch:
            f = _TORCH_CELLS[kind]
            if wi is None:       # the projected form: an identity input weight in torch
                wi = torch.eye(G, dtype=D)
        else:
            f = getattr(cells, kind + "_cell")
        out = f(x, (h, c) if kind == "lstm" else h, wi, wh, bi, bh)
        return out if isinstance(out, tuple) else (out,)
    return arrs, run


@pytest.mark.parametrize("kind", ["rnn_tanh", "rnn_relu", "lstm", "gru"])
@pytest.mark.parametrize("wih,bias", [(True, True), (False, True), (True, False)])
def test_cell_ops(kind, wih, bias):
    arrs, run = _cell_case(kind, wih, bias)
    rng = _rng(1)
    tt = [torch.tensor(a, requires_grad=True) for a in arrs]
    nt = [ndgrad.tensor(a, requires_grad=True) for a in arrs]
    to, no = run(torch, tt), run(ndgrad, nt)
    for a, b in zip(to, no):
        assert_close(b, a, what="value")
    assert no[0].grad_fn.name() == {"rnn_tanh": "RnnTanhCellBackward0",
                                    "rnn_relu": "RnnReluCellBackward0",
                                    "lstm": "LstmCellBackward0", "gru": "GruCellBackward0"}[kind]
    gs = [rng.standard_normal(o.shape) for o in to]
    tg = torch.autograd.grad(to, tt, [torch.tensor(g) for g in gs], create_graph=True)
    ng = ndgrad.autograd.grad(no, nt, [ndgrad.tensor(g) for g in gs], create_graph=True)
    plain = ndgrad.autograd.grad(run(ndgrad, nt), nt, [ndgrad.tensor(g) for g in gs])
    for a, b, c in zip(tg, ng, plain):
        assert_close(b, a, what="vjp (create_graph)")
        assert_close(c, a, what="vjp (NumPy backward)")
    # second order
    tgg = torch.autograd.grad(sum((g * g).sum() for g in tg), tt, allow_unused=True)
    ngg = ndgrad.autograd.grad(sum((g * g).sum() for g in ng), nt, allow_unused=True)
    for a, b in zip(tgg, ngg):
        a = np.zeros(1) if a is None else a.numpy()
        b = np.zeros(1) if b is None else b.numpy()
        if a.shape != b.shape:       # torch gives zeros where ndgrad has no path (relu'')
            assert not a.any() and not b.any()
        else:
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    # forward mode
    tans = [rng.standard_normal(a.shape) for a in arrs]
    _, tj = torch.func.jvp(lambda *a: run(torch, a), tuple(torch.tensor(a) for a in arrs),
                           tuple(torch.tensor(t) for t in tans))
    with fwAD.dual_level():
        du = [fwAD.make_dual(ndgrad.tensor(a), ndgrad.tensor(t)) for a, t in zip(arrs, tans)]
        nj = [fwAD.unpack_dual(o).tangent for o in run(ndgrad, du)]
    for a, b in zip(tj, nj):
        assert_close(b, a, what="jvp")
    # batched cotangents
    gb = [rng.standard_normal((2,) + tuple(o.shape)) for o in to]
    tb = torch.autograd.grad(run(torch, tt), tt, [torch.tensor(g) for g in gb],
                             is_grads_batched=True)
    nb = ndgrad.autograd.grad(run(ndgrad, nt), nt, [ndgrad.tensor(g) for g in gb],
                              is_grads_batched=True)
    for a, b in zip(tb, nb):
        assert_close(b, a, what="batched vjp")


def test_cell_op_errors():
    x, h = ndgrad.ones(2, 3), ndgrad.ones(2, 4)
    with pytest.raises(RuntimeError, match="inconsistent input_size"):
        cells.rnn_tanh_cell(x, h, ndgrad.ones(4, 5), ndgrad.ones(4, 4))
    with pytest.raises(RuntimeError, match="doesn't match hidden0 batch size"):
        cells.gru_cell(x, ndgrad.ones(3, 4), ndgrad.ones(12, 3), ndgrad.ones(12, 4))
    with pytest.raises(RuntimeError, match="hidden1 has inconsistent hidden_size"):
        cells.lstm_cell(x, (h, ndgrad.ones(2, 5)), ndgrad.ones(16, 3), ndgrad.ones(16, 4))


# ---------------------------------------------------------------------------- layers
def _pair(cls, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (getattr(torch.nn, cls)(*args, **kwargs).double(),
                getattr(nn, cls)(*args, **kwargs).double())


class _Call(torch.nn.Module):
    """Calls the wrapped module as ``m(x, (h, c))`` (LSTM states) or through packing."""

    def __init__(self, m, how, lib):
        super().__init__()
        self.m, self.how, self.lib = m, how, lib

    def forward(self, x, *states):
        if self.how == "lstm_state":
            return self.m(x, tuple(states))
        R = trnn if self.lib is torch else nrnn
        p = R.pack_padded_sequence(x, [5, 2, 4], batch_first=self.m.batch_first,
                                   enforce_sorted=False)
        out, h = self.m(p, *states)
        return R.pad_packed_sequence(out, batch_first=self.m.batch_first)[0], h


class _CallN(nn.Module):
    def __init__(self, m, how):
        super().__init__()
        self.inner = _Call(m, how, ndgrad)
        self.m = m

    def forward(self, *a):
        return self.inner.forward(*a)


_CONFIGS = [dict(), dict(num_layers=2, bidirectional=True, batch_first=True), dict(bias=False)]


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("cfg", range(len(_CONFIGS) + 1))
def test_layers_match_torch(cls, cfg):
    if cfg == len(_CONFIGS):
        kw = {"RNN": dict(nonlinearity="relu", num_layers=2),
              "LSTM": dict(proj_size=2, num_layers=2, bidirectional=True),
              "GRU": dict(num_layers=2, dropout=0.3)}[cls]
    else:
        kw = _CONFIGS[cfg]
    t, n = _pair(cls, 3, 4, **kw)
    if kw.get("dropout"):
        t.eval()
        n.eval()
    bf = kw.get("batch_first", False)
    x = torch.randn(2, 5, 3, dtype=D) if bf else torch.randn(5, 2, 3, dtype=D)
    check_module(t, n, x)
    check_module(t, n, torch.randn(5, 3, dtype=D))          # unbatched
    nd = 2 if kw.get("bidirectional") else 1
    shape = (kw.get("num_layers", 1) * nd, 2, kw.get("proj_size") or 4)
    h0 = torch.randn(*shape, dtype=D)
    if cls == "LSTM":
        c0 = torch.randn(shape[0], 2, 4, dtype=D)
        check_module(_Call(t, "lstm_state", torch), _CallN(n, "lstm_state"), x, h0, c0)
    else:
        check_module(t, n, x, h0)
    xp = torch.randn(3, 5, 3, dtype=D) if bf else torch.randn(5, 3, 3, dtype=D)
    check_module(_Call(t, "packed", torch), _CallN(n, "packed"), xp)
    assert repr(n) == repr(t)


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_torch(cls, bias):
    t, n = _pair(cls, 3, 4, bias=bias)
    check_module(t, n, torch.randn(2, 3, dtype=D))
    check_module(t, n, torch.randn(3, dtype=D))
    if cls == "LSTMCell":
        check_module(_Call(t, "lstm_state", torch), _CallN(n, "lstm_state"),
                     torch.randn(2, 3, dtype=D), torch.randn(2, 4, dtype=D),
                     torch.randn(2, 4, dtype=D))
    else:
        check_module(t, n, torch.randn(2, 3, dtype=D), torch.randn(2, 4, dtype=D))
    assert repr(n) == repr(t)
    t, n = _pair("RNNCell", 3, 4, nonlinearity="relu")
    check_module(t, n, torch.randn(2, 3, dtype=D))
    assert repr(n) == repr(t)


def test_parameters_init_and_names():
    t = torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    n = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    assert list(n.state_dict()) == list(t.state_dict())
    assert n._flat_weights_names == t._flat_weights_names
    assert [[p.shape for p in ps] for ps in n.all_weights] == \
        [[tuple(p.shape) for p in ps] for ps in t.all_weights]
    bound = 1 / np.sqrt(5)
    for p in n.parameters():
        assert p.dtype == ndgrad.float32
        a = p.detach().numpy()
        assert a.min() >= -bound and a.max() <= bound and a.std() > 0
    n.flatten_parameters()
    g = nn.GRU(3, 4, dtype=ndgrad.float64)
    assert g.weight_ih_l0.dtype == ndgrad.float64


def test_dropout_between_layers():
    n = nn.LSTM(3, 4, num_layers=2, dropout=0.5).double()
    x = ndgrad.randn(6, 2, 3, dtype=ndgrad.float64)
    n.eval()
    a, b = n(x)[0], n(x)[0]
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    n.train()
    ndgrad.manual_seed(0)
    c = n(x)[0]
    ndgrad.manual_seed(1)
    d = n(x)[0]
    assert not np.allclose(c.detach().numpy(), d.detach().numpy())
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)


def _raises_like(tf, nf):
    try:
        tf()
    except Exception as e:       # noqa: BLE001
        texc = e
    else:
        raise AssertionError("torch does not raise")
    with pytest.raises(type(texc)) as info:
        nf()
    key = str(texc).replace("torch.", "ndgrad.").split(". ")[0][:40]
    assert key in str(info.value), (str(info.value), str(texc))


def test_errors_match_torch():
    cases = [
        lambda m: m.LSTM(3, 4, proj_size=4),
        lambda m: m.GRU(3, 4, proj_size=2),
        lambda m: m.RNN(3, 4, nonlinearity="sigmoid"),
        lambda m: m.LSTM(3, 0),
        lambda m: m.LSTM(3, 4, num_layers=0),
        lambda m: m.LSTM(3, 4, dropout=1.5),
        lambda m: m.LSTM(3, 4, bias=1),
    ]
    for c in cases:
        _raises_like(lambda: c(torch.nn), lambda: c(nn))
    t, n = torch.nn.LSTM(3, 4), nn.LSTM(3, 4)
    tg, ng = torch.nn.GRU(3, 4), nn.GRU(3, 4)
    calls = [
        (t, n, lambda L: (L.randn(2, 2, 5),)),
        (t, n, lambda L: (L.randn(2, 3, 2, 3),)),
        (t, n, lambda L: (L.randn(2, 2, 3), (L.randn(1, 3, 4), L.randn(1, 2, 4)))),
        (t, n, lambda L: (L.randn(2, 2, 3), (L.randn(1, 2, 4), L.randn(1, 2, 5)))),
        (t, n, lambda L: (L.randn(2, 2, 3), (L.randn(2, 4), L.randn(1, 2, 4)))),
        (tg, ng, lambda L: (L.randn(2, 2, 3), L.randn(2, 4))),
        (tg, ng, lambda L: (L.randn(2, 3), L.randn(1, 2, 4))),
        (tg, ng, lambda L: (L.randn(2, 2, 3), L.randn(1, 3, 4))),
        (tg, ng, lambda L: (L.randn(2, 2, 3, dtype=L.float64),)),
        # an LSTM given one hidden state: torch reads hx[1] (IndexError), a tensor's rows
        (t, n, lambda L: (L.randn(2, 2, 3), (L.randn(1, 2, 4),))),
        (t, n, lambda L: (L.randn(2, 2, 3), [L.randn(1, 2, 4)])),
        (t, n, lambda L: (L.randn(2, 2, 3), L.randn(1, 2, 4))),
        (t, n, lambda L: (L.randn(2, 2, 3), L.randn(2, 2, 4))),
        (t, n, lambda L: (L.randn(2, 2, 3), (L.randn(1, 2, 4),) * 3)),
    ]
    for tm, nm, args in calls:
        _raises_like(lambda: tm(*args(torch)), lambda: nm(*args(ndgrad)))
    tc, nc = torch.nn.LSTMCell(3, 4), nn.LSTMCell(3, 4)
    cell_calls = [
        lambda L: (L.randn(2, 2, 3),),
        lambda L: (L.randn(2, 3), (L.randn(2, 2, 4), L.randn(2, 4))),
        lambda L: (L.randn(2, 3), (L.randn(2, 4), L.randn(2, 5))),
        lambda L: (L.randn(2, 5),),
        lambda L: (L.randn(2, 3), (L.randn(3, 4), L.randn(3, 4))),
    ]
    for args in cell_calls:
        _raises_like(lambda: tc(*args(torch)), lambda: nc(*args(ndgrad)))


# ---------------------------------------------------------------------------- packed sequences
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_pad_roundtrip(batch_first):
    rng = _rng(3)
    x = rng.standard_normal((3, 4, 2) if batch_first else (4, 3, 2))
    for lens in ([2, 4, 1], [4, 2, 2]):
        xt, xn = torch.tensor(x, requires_grad=True), ndgrad.tensor(x, requires_grad=True)
        pt = trnn.pack_padded_sequence(xt, lens, batch_first=batch_first, enforce_sorted=False)
        pn = nrnn.pack_padded_sequence(xn, lens, batch_first=batch_first, enforce_sorted=False)
        assert_close(pn.data, pt.data)
        assert pn.batch_sizes.tolist() == pt.batch_sizes.tolist()
        assert pn.sorted_indices.tolist() == pt.sorted_indices.tolist()
        assert pn.unsorted_indices.tolist() == pt.unsorted_indices.tolist()
        for total in (None, 6):
            a, la = trnn.pad_packed_sequence(pt, batch_first, -1.0, total)
            b, lb = nrnn.pad_packed_sequence(pn, batch_first, -1.0, total)
            assert_close(b, a)
            assert lb.tolist() == la.tolist() and lb.dtype == ndgrad.int64
        g = rng.standard_normal(tuple(a.shape))
        a.backward(torch.tensor(g))
        b.backward(ndgrad.tensor(g))
        assert_close(xn.grad, xt.grad)


def test_pad_sequence_and_friends():
    rng = _rng(4)
    seqs = [rng.standard_normal((n, 3)) for n in (2, 4, 1)]
    for side in ("left", "right"):
        for bf in (False, True):
            a = trnn.pad_sequence([torch.tensor(s) for s in seqs], bf, 2.0, side)
            b = nrnn.pad_sequence([ndgrad.tensor(s) for s in seqs], bf, 2.0, side)
            assert_close(b, a)
    pt = trnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    pn = nrnn.pack_sequence([ndgrad.tensor(s) for s in seqs], enforce_sorted=False)
    assert_close(pn.data, pt.data)
    for u, s in zip(nrnn.unpack_sequence(pn), seqs):
        np.testing.assert_array_equal(u.numpy(), s)
    padded = nrnn.pad_sequence([ndgrad.tensor(s) for s in seqs])
    for u, s in zip(nrnn.unpad_sequence(padded, ndgrad.tensor([2, 4, 1])), seqs):
        np.testing.assert_array_equal(u.numpy(), s)
    assert isinstance(pn.double(), nrnn.PackedSequence)
    assert pn.data.dtype == ndgrad.float64 and pn.to(ndgrad.float32).data.dtype == ndgrad.float32


def test_packed_errors_match_torch():
    x = [torch.randn(4, 3, 2), ndgrad.randn(4, 3, 2)]

    def both(f):
        _raises_like(lambda: f(trnn, x[0]), lambda: f(nrnn, x[1]))
    both(lambda R, v: R.pack_padded_sequence(v, [2, 3, 1]))
    both(lambda R, v: R.pack_padded_sequence(v, [3, 2, 0]))
    both(lambda R, v: R.pack_padded_sequence(v, [3, 2]))
    both(lambda R, v: R.pad_packed_sequence(R.pack_padded_sequence(v, [3, 2, 1]),
                                            total_length=2))
    both(lambda R, v: R.pad_sequence([]))
    both(lambda R, v: R.pad_sequence([v[0], v[0].t()]))
    both(lambda R, v: R.pad_sequence([v[0], v[1]], padding_side="middle"))


# ---------------------------------------------------------------------------- training
def test_lstm_training_trajectory():
    """A 2-layer LSTM with a linear head, 20 steps of plain gradient descent from torch's
    weights on the same data: the same loss at every step (float64, 1e-9 relative)."""
    torch.manual_seed(0)
    rng = _rng(5)
    tl, th = torch.nn.LSTM(3, 6, num_layers=2).double(), torch.nn.Linear(6, 2).double()
    nl, nh = nn.LSTM(3, 6, num_layers=2).double(), nn.Linear(6, 2).double()
    copy_state(tl, nl)
    copy_state(th, nh)
    x, y = rng.standard_normal((7, 4, 3)), rng.standard_normal((4, 2))
    tx, ty, nx, ny = torch.tensor(x), torch.tensor(y), ndgrad.tensor(x), ndgrad.tensor(y)
    tparams = list(tl.parameters()) + list(th.parameters())
    nparams = list(nl.parameters()) + list(nh.parameters())
    for _ in range(20):
        tloss = ((th(tl(tx)[0][-1]) - ty) ** 2).mean()
        nloss = ((nh(nl(nx)[0][-1]) - ny) ** 2).mean()
        np.testing.assert_allclose(nloss.item(), tloss.item(), rtol=1e-9)
        for p in tparams:
            p.grad = None
        for p in nparams:
            p.grad = None
        tloss.backward()
        nloss.backward()
        with torch.no_grad():
            for p in tparams:
                p -= 0.1 * p.grad
        with ndgrad.no_grad():
            for p in nparams:
                p -= 0.1 * p.grad


# ---------------------------------------------------------------------------- sequence ops
# nn.RNN/LSTM/GRU run one op per layer and direction (Note [Fused recurrent layers]); these
# check it against the same recurrence written with one cell op per step (itself checked
# against torch above), in every mode of differentiation.
def _layer_case(kind, bias, seed=0, T=4, B=2, In=3, H=3):
    rng = _rng(seed)
    G = _GATES[kind] * H
    arrs = [rng.standard_normal((T, B, In)), rng.standard_normal((B, H))]
    if kind == "lstm":
        arrs.append(rng.standard_normal((B, H)))
    arrs += [0.5 * rng.standard_normal((G, In)), 0.5 * rng.standard_normal((G, H))]
    if bias:
        arrs += [rng.standard_normal(G), rng.standard_normal(G)]
    return arrs


def _layer_args(kind, bias, ts):
    it = iter(ts)
    x, h = next(it), next(it)
    c = next(it) if kind == "lstm" else None
    wi, wh = next(it), next(it)
    bi, bh = (next(it), next(it)) if bias else (None, None)
    return x, h, c, wi, wh, bi, bh


def _fused(kind, bias, reverse):
    def run(*ts):
        x, h, c, wi, wh, bi, bh = _layer_args(kind, bias, ts)
        return cells.recurrent_layer(kind, x, h, c, wi, wh, bi, bh, reverse)
    return run


def _per_step(kind, bias, reverse):
    def run(*ts):
        x, h, c, wi, wh, bi, bh = _layer_args(kind, bias, ts)
        T = x.shape[0]
        outs = [None] * T
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            if kind == "lstm":
                h, c = cells.lstm_cell(x[t], (h, c), wi, wh, bi, bh)
            else:
                h = getattr(cells, kind + "_cell")(x[t], h, wi, wh, bi, bh)
            outs[t] = h
        out = ndgrad.stack(outs, 0)
        return (out, h, c) if kind == "lstm" else (out, h)
    return run


def _same(got, want, what):
    assert len(got) == len(want), what
    for a, b in zip(got, want):
        if a is None or b is None:
            assert a is None and b is None, what
            continue
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-11,
                                   atol=1e-12, err_msg=what)


@pytest.mark.parametrize("kind", ["rnn_tanh", "rnn_relu", "lstm", "gru"])
@pytest.mark.parametrize("bias,reverse", [(True, False), (True, True), (False, False)])
def test_layer_op_equals_per_step_cells(kind, bias, reverse):
    arrs = _layer_case(kind, bias)
    fused, steps = _fused(kind, bias, reverse), _per_step(kind, bias, reverse)
    ts = [ndgrad.tensor(a, requires_grad=True) for a in arrs]
    fo, so = fused(*ts), steps(*ts)
    _same(fo, so, "values")
    assert fo[0].grad_fn.name() == cells._LAYER_NODES[kind]
    rng = _rng(1)
    gs = [ndgrad.tensor(rng.standard_normal(tuple(o.shape))) for o in fo]
    # NumPy backward: all cotangents, then each output alone
    _same(ndgrad.autograd.grad(fo, ts, gs), ndgrad.autograd.grad(so, ts, gs), "vjp")
    for k in range(len(fo)):
        _same(ndgrad.autograd.grad(fused(*ts)[k], ts, gs[k]),
              ndgrad.autograd.grad(steps(*ts)[k], ts, gs[k]), f"vjp of output {k}")
    # differentiable backward and second order
    fg = ndgrad.autograd.grad(fused(*ts), ts, gs, create_graph=True)
    sg = ndgrad.autograd.grad(steps(*ts), ts, gs, create_graph=True)
    _same(fg, sg, "vjp (create_graph)")
    _same(ndgrad.autograd.grad(sum((g * g).sum() for g in fg), ts, allow_unused=True),
          ndgrad.autograd.grad(sum((g * g).sum() for g in sg), ts, allow_unused=True),
          "second order")
    # batched cotangents
    gb = [ndgrad.tensor(rng.standard_normal((2,) + tuple(o.shape))) for o in fo]
    _same(ndgrad.autograd.grad(fused(*ts), ts, gb, is_grads_batched=True),
          ndgrad.autograd.grad(steps(*ts), ts, gb, is_grads_batched=True), "batched vjp")
    # forward mode
    tans = [rng.standard_normal(a.shape) for a in arrs]
    with fwAD.dual_level():
        du = [fwAD.make_dual(ndgrad.tensor(a), ndgrad.tensor(t)) for a, t in zip(arrs, tans)]
        fj = [fwAD.unpack_dual(o).tangent for o in fused(*du)]
        sj = [fwAD.unpack_dual(o).tangent for o in steps(*du)]
    _same(fj, sj, "jvp")
    # vmap over a leading dimension of gx and h0 (one op per row)
    xb = ndgrad.tensor(rng.standard_normal((2,) + arrs[0].shape))
    hb = ndgrad.tensor(rng.standard_normal((2,) + arrs[1].shape))
    rest = [ndgrad.tensor(a) for a in arrs[2:]]
    _same(ndgrad.func.vmap(lambda x, h: fused(x, h, *rest))(xb, hb),
          ndgrad.func.vmap(lambda x, h: steps(x, h, *rest))(xb, hb), "vmap")


@pytest.mark.parametrize("kind", ["rnn_tanh", "lstm", "gru"])
def test_layer_op_gradcheck(kind):
    arrs = _layer_case(kind, True, seed=2, T=3, B=2, In=2, H=2)
    ts = tuple(ndgrad.tensor(a, requires_grad=True) for a in arrs)
    for reverse in (False, True):
        assert ndgrad.autograd.gradcheck(_fused(kind, True, reverse), ts)
    assert ndgrad.autograd.gradgradcheck(_fused(kind, True, False), ts)


def test_vmap_grad_of_cell_op_per_row():
    # each row of the batching rule has its own saved list (it used to share row 0's)
    rng = _rng(6)
    x = rng.standard_normal((3, 2, 16))
    h, c, w = ndgrad.tensor(rng.standard_normal((2, 4))), \
        ndgrad.tensor(rng.standard_normal((2, 4))), ndgrad.tensor(rng.standard_normal((16, 4)))

    def f(v):
        h1, _ = cells.lstm_cell(v, (h, c), None, w)
        return (h1 * h1).sum()
    got = ndgrad.func.vmap(ndgrad.func.grad(f))(ndgrad.tensor(x))
    want = np.stack([ndgrad.func.grad(f)(ndgrad.tensor(r)).numpy() for r in x])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def _module_grads(m, x, create_graph=False):
    out, hid = m(x)
    hs = hid if isinstance(hid, tuple) else (hid,)
    loss = (out * out).sum() + sum((h * h * 0.5).sum() for h in hs)
    params = list(m.parameters())
    return out, hs, ndgrad.autograd.grad(loss, params + [x], create_graph=create_graph)


_FUSED_CASES = [("RNN", {}), ("LSTM", {}), ("GRU", {}), ("LSTM", dict(proj_size=2))]


@pytest.mark.parametrize("cls,kw", _FUSED_CASES)
def test_layers_fused_equal_per_step(cls, kw, monkeypatch):
    from ndgrad.ops import nn_recurrent_layers as rnn_mod
    m = getattr(nn, cls)(3, 4, num_layers=2, bidirectional=True, dropout=0.4, **kw).double()
    x = ndgrad.randn(5, 2, 3, dtype=ndgrad.float64, requires_grad=True)
    results = []
    for fused in (True, False):
        monkeypatch.setattr(rnn_mod, "SEQUENCE_OPS", fused)
        ndgrad.manual_seed(3)       # the same dropout masks between the layers
        results.append(_module_grads(m, x))
    (o1, h1, g1), (o2, h2, g2) = results
    _same((o1,) + h1 + g1, (o2,) + h2 + g2, "module")
    m.eval()
    a, b = m(x)[0], nn.utils.rnn.pad_packed_sequence(
        m(nn.utils.rnn.pack_padded_sequence(x, [5, 5], enforce_sorted=False))[0])[0]
    _same((a,), (b,), "packed path (per step) equals the fused one at full length")


@pytest.mark.parametrize("cls,kw", _FUSED_CASES)
def test_layers_second_order_match_torch(cls, kw):
    t, n = _pair(cls, 3, 4, num_layers=2, bidirectional=True, **kw)
    copy_state(t, n)
    x = torch.randn(4, 2, 3, dtype=D, requires_grad=True)
    xn = ndgrad.tensor(x.detach().numpy(), requires_grad=True)
    res = []
    for m, v, lib in ((t, x, torch), (n, xn, ndgrad)):
        out, hid = m(v)
        hs = hid if isinstance(hid, tuple) else (hid,)
        loss = (out * out).sum() + sum((h * h * 0.5).sum() for h in hs)
        ps = list(m.parameters())
        g = lib.autograd.grad(loss, ps + [v], create_graph=True)
        gg = lib.autograd.grad(sum((a * a).sum() for a in g), ps + [v])
        res.append([a.detach().numpy() for a in g + gg])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def test_layer_grad_fn_names_and_hooks():
    x = torch.randn(5, 2, 3)
    for cls, kw in (("LSTM", {}), ("GRU", {}), ("LSTM", dict(num_layers=2, batch_first=True))):
        t, n = _pair(cls, 3, 4, **kw)
        t.float()
        n.float()
        to, th = t(x)
        no, nh = n(ndgrad.tensor(x.numpy()))
        if cls == "LSTM":       # torch's CPU LSTM layer op (float32)
            assert no.grad_fn.name() == to.grad_fn.name()
        th, nh = (th, nh) if isinstance(th, tuple) else ((th,), (nh,))
        assert [h.grad_fn.name() for h in nh] == [h.grad_fn.name() for h in th]
    m = nn.LSTM(3, 4).double()
    out, (h, c) = m(ndgrad.randn(5, 2, 3, dtype=ndgrad.float64))
    seen = []
    out.register_hook(lambda g: seen.append(("out", tuple(g.shape))))
    h.register_hook(lambda g: seen.append(("h", tuple(g.shape))))
    (out.sum() + h.sum()).backward()
    assert sorted(seen) == [("h", (1, 2, 4)), ("out", (5, 2, 4))]
    bi, bh = m.bias_ih_l0.grad.numpy(), m.bias_hh_l0.grad.numpy()
    assert np.array_equal(bi, bh) and not np.shares_memory(bi, bh)  # equal, never one array


@pytest.mark.parametrize("cls,kw", _FUSED_CASES)
def test_layers_jacrev_jacfwd_match_torch(cls, kw):
    t, n = _pair(cls, 3, 4, bidirectional=True, **kw)
    copy_state(t, n)
    x = torch.randn(3, 1, 3, dtype=D)
    xn = ndgrad.tensor(x.numpy())
    for tf, nf in ((torch.func.jacrev, ndgrad.func.jacrev),
                   (torch.func.jacfwd, ndgrad.func.jacfwd)):
        want = tf(lambda v: t(v)[0].sum(0))(x)
        got = nf(lambda v: n(v)[0].sum(0))(xn)
        assert_close(got, want, what=tf.__name__)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN", "LSTMCell"])
def test_compiled_recurrent_steps_equal_eager(cls):
    # the ops fill a fresh ``saved`` list per run (ScratchList in compiled code); a traced
    # backward records the differentiable rules, never the NumPy one that reads the list (whose
    # arrays would be baked into the graph: stale gradients from the second call on)
    ndgrad.manual_seed(0)
    cell = cls.endswith("Cell")
    m = getattr(nn, cls)(3, 4) if cell else getattr(nn, cls)(
        3, 4, num_layers=2, bidirectional=True).double()
    params = list(m.parameters())

    def data():
        return ndgrad.randn(2, 3) if cell else ndgrad.randn(5, 2, 3, dtype=ndgrad.float64)

    def loss(v):
        out = m(v)
        return (out[0] if isinstance(out, tuple) else out).pow(2).sum()

    def whole(v):
        value = loss(v)
        return value.detach(), ndgrad.autograd.grad(value, params)

    compiled, whole_c = ndgrad.compile(loss), ndgrad.compile(whole)
    tol = dict(rtol=1e-5, atol=1e-6)
    for _ in range(3):              # new inputs each call; later calls run the cached code
        x = data()
        m.zero_grad()
        want_value = loss(x)
        want_value.backward()
        want = [want_value.detach()] + [p.grad.clone() for p in params]
        m.zero_grad()
        value = compiled(x)
        value.backward()
        got = [value.detach()] + [p.grad.clone() for p in params]
        value, grads = whole_c(x)
        for g, h, w in zip(got, (value,) + tuple(grads), want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), **tol)
            np.testing.assert_allclose(h.numpy(), w.numpy(), **tol)


def test_compiled_ctc_loss_gradient_is_refused():
    from ndgrad.jit import TraceError
    w = ndgrad.randn(5, 5, requires_grad=True)

    def step(x):
        lp = (x @ w).log_softmax(-1)
        loss = nn.functional.ctc_loss(lp, ndgrad.tensor([[1, 2]]), [4], [2])
        return ndgrad.autograd.grad(loss, w)

    with pytest.raises(TraceError, match="gradient of 'ctc_loss' .* cannot be compiled yet"):
        ndgrad.compile(step)(ndgrad.randn(4, 1, 5))
    with ndgrad.no_grad():          # without gradients it compiles
        f = ndgrad.compile(lambda x: nn.functional.ctc_loss(
            (x @ w).log_softmax(-1), ndgrad.tensor([[1, 2]]), [4], [2]))
        for _ in range(2):
            x = ndgrad.randn(4, 1, 5)
            np.testing.assert_allclose(f(x).numpy(), nn.functional.ctc_loss(
                (x @ w).log_softmax(-1), ndgrad.tensor([[1, 2]]), [4], [2]).numpy(), rtol=1e-6)


@pytest.mark.parametrize("kind,gates", [("rnn_tanh_cell", 1), ("lstm_cell", 4), ("gru_cell", 3)])
def test_bfloat16_cells_stay_bfloat16(kind, gates):
    res = []
    for L, fn in ((torch, getattr(torch, kind)), (ndgrad, getattr(cells, kind))):
        b = L.bfloat16
        x = L.tensor(np.linspace(-1, 1, 8).reshape(2, 4)).to(b).requires_grad_()
        h = L.zeros(2, 5, dtype=b)
        w = (L.ones(gates * 5, 4, dtype=b) * 0.1).requires_grad_()
        wh = (L.ones(gates * 5, 5, dtype=b) * 0.1).requires_grad_()
        out = fn(x, (h, h) if kind == "lstm_cell" else h, w, wh, None, None)
        out = out[0] if isinstance(out, tuple) else out
        out.float().sum().backward()
        res.append((str(out.dtype).split(".")[-1], str(w.grad.dtype).split(".")[-1],
                    out.float().detach().numpy(), w.grad.float().numpy()))
    assert res[0][:2] == res[1][:2] == ("bfloat16", "bfloat16")
    np.testing.assert_allclose(res[1][2], res[0][2], atol=1e-2)
    np.testing.assert_allclose(res[1][3], res[0][3], atol=1e-2)
