"""torch's whole-network functions ``lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu`` (Note [Recurrent
networks as functions] in ndgrad/ops/nn_recurrent_layers.py): both overloads against torch
(values and gradients in float64), torch's argument errors, and the modules' calls reaching
``__torch_function__`` handlers and modes as that function."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad

LIBS = {"ndgrad": ndgrad, "torch": torch}
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
RNG = np.random.default_rng(0)


def _params(kind, n_in, H, layers, D, bias, proj=0):
    out, R = [], proj or H
    for layer in range(layers):
        for _ in range(D):
            i = n_in if layer == 0 else R * D
            g = GATES[kind] * H
            out += [RNG.standard_normal((g, i)) * 0.5, RNG.standard_normal((g, R)) * 0.5]
            if bias:
                out += [RNG.standard_normal(g) * 0.5, RNG.standard_normal(g) * 0.5]
            if proj:
                out.append(RNG.standard_normal((proj, H)) * 0.5)
    return out


CASES = [  # kind, layers, bidirectional, bias, proj, batch_first, packed
    ("lstm", 2, True, True, 0, False, False),
    ("lstm", 1, False, False, 2, True, False),
    ("lstm", 2, False, True, 0, False, True),
    ("gru", 2, True, True, 0, True, False),
    ("gru", 1, True, False, 0, False, True),
    ("rnn_tanh", 2, False, True, 0, False, False),
    ("rnn_relu", 1, True, True, 0, False, True),
]


def _call(lib, kind, arrays, layers, bidir, bias, proj, batch_first, packed):
    x_a, h_a, c_a, ps = arrays
    leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (x_a, h_a)]
    if kind == "lstm":
        leaves.append(lib.tensor(c_a, dtype=lib.float64, requires_grad=True))
    params = [lib.tensor(p, dtype=lib.float64, requires_grad=True) for p in ps]
    x, h = leaves[0], leaves[1]
    state = (h, leaves[2]) if kind == "lstm" else h
    fn = getattr(lib, kind)
    if packed:
        bs = lib.tensor([2, 2, 1, 1])
        data = x[:4].reshape(8, -1)[:6]          # the packed data of lengths (4, 2)
        res = fn(data, bs, state, params, bias, layers, 0.0, True, bidir)
    else:
        res = fn(input=x, hx=state, params=params, has_biases=bias, num_layers=layers,
                 dropout=0.0, train=True, bidirectional=bidir, batch_first=batch_first)
    loss = sum((r * r).sum() for r in res)
    grads = lib.autograd.grad(loss, leaves + params)
    return [r.detach().numpy() for r in res] + [g.numpy() for g in grads]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_functions_match_torch(case):
    kind, layers, bidir, bias, proj, batch_first, packed = case
    D = 2 if bidir else 1
    n_in, H = 3, 4
    x_a = RNG.standard_normal((2, 5, n_in) if batch_first else (5, 2, n_in))
    h_a = RNG.standard_normal((layers * D, 2, proj or H))
    c_a = RNG.standard_normal((layers * D, 2, H))
    arrays = (x_a, h_a, c_a, _params(kind, n_in, H, layers, D, bias, proj))
    ours = _call(ndgrad, kind, arrays, layers, bidir, bias, proj, batch_first, packed)
    theirs = _call(torch, kind, arrays, layers, bidir, bias, proj, batch_first, packed)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _bad_calls(lib):
    # float64: torch's float32 LSTM takes its oneDNN path, whose count error is worded apart
    def z(*shape):
        return lib.zeros(*shape, dtype=lib.float64)
    x, h, c = z(5, 2, 3), z(1, 2, 4), z(1, 2, 4)
    w = [z(16, 3), z(16, 4), z(16), z(16)]
    g = [z(12, 3), z(12, 4), z(12), z(12)]
    g2 = g + [z(12, 4), z(12, 4), z(12), z(12)]
    tail = (True, 1, 0.0, False, False, False)
    return [
        lambda: lib.lstm(x, (h,), w, *tail),
        lambda: lib.lstm(x, [], w, *tail),
        lambda: lib.lstm(x, (h, c), w[:3], *tail),
        lambda: lib.lstm(x, (h, z(1, 2, 5)), w, *tail),
        lambda: lib.lstm(x, (h, c), w, True, True, 0.0, False, False, False),
        lambda: lib.lstm(x, (h, c), w, 1, 1, 0.0, False, False, False),
        lambda: lib.lstm(x, (h, c), w, True, 1, 0.0, False, False),
        lambda: lib.lstm(x, (h, c), w, *tail, bad=False),
        lambda: lib.lstm(x, (h, c), w + [3], *tail),
        lambda: lib.gru(x, (h,), g, *tail),
        lambda: lib.gru(x, h, g[:3], *tail),
        lambda: lib.gru(x, h, g, True, 2, 0.0, False, False, False),
        lambda: lib.gru(x, z(2, 2, 4), g2, True, 1, 0.0, False, False, False),
        lambda: lib.gru(x, z(2, 2, 4), g, True, 2, 0.0, False, False, False),
        lambda: lib.gru(x, h, g2, True, 1, 0.0, False, False, False),
        lambda: lib.gru(x, h, g, True, 1, 0.0, False, True, False),
        lambda: lib.gru(x[:0], h, g, *tail),
        lambda: lib.gru(x[0], h, g, *tail),
        lambda: lib.rnn_tanh(x.reshape(10, 3), lib.tensor([2.0] * 5), h, g, True, 1, 0.0,
                             False, False),
        # shapes and dtypes the matmuls and additions refuse
        lambda: lib.gru(x, z(1, 3, 4), g, *tail),
        lambda: lib.gru(x, z(1, 2, 5), g, *tail),
        lambda: lib.gru(z(5, 2, 4), h, g, *tail),
        lambda: lib.gru(x, h, [g[0], z(11, 4)] + g[2:], *tail),
        lambda: lib.gru(x, h, g[:2] + [z(11), g[3]], *tail),
        lambda: lib.gru(x, h, g[:3] + [z(13)], *tail),
        lambda: lib.gru(x.float(), h, g, *tail),
        lambda: lib.gru(x, h.float(), g, *tail),
        lambda: lib.rnn_tanh(x, h, [z(5, 3), z(5, 4)], False, 1, 0.0, False, False, False),
        lambda: lib.lstm(x, (h, z(1, 3, 4)), w, *tail),
    ]


def test_argument_errors_match_torch():
    for ours, theirs in zip(_bad_calls(ndgrad), _bad_calls(torch)):
        with pytest.raises(Exception) as want:
            theirs()
        with pytest.raises(want.type) as got:
            ours()
        assert str(got.value).split("\n")[0] == str(want.value).split("\n")[0]


@pytest.mark.parametrize("lib", LIBS.values(), ids=LIBS.keys())
def test_module_call_reaches_handler_as_the_function(lib):
    seen: list = []

    class Sub(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is lib.lstm:
                seen.append((len(args), isinstance(args[1], lib.Tensor), len(args[2])))
                return (args[0][..., :2] * 0, "h", "c")
            return super().__torch_function__(func, types, args, kwargs or {})

    m = lib.nn.LSTM(2, 3, num_layers=2)
    out, (h, c) = m(lib.ones(4, 1, 2).as_subclass(Sub))
    assert seen == [(9, False, 8)] and (h, c) == ("h", "c") and out.shape == (4, 1, 2)
    seen.clear()
    packed = lib.nn.utils.rnn.pack_padded_sequence(lib.ones(4, 2, 2).as_subclass(Sub), [4, 3])
    m(packed)
    assert seen == [(9, True, 2)]              # (data, batch_sizes, (h, c), params, ...)


@pytest.mark.parametrize("lib", LIBS.values(), ids=LIBS.keys())
def test_mode_sees_the_network_functions(lib):
    names: list = []

    class Log(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            names.append(func.__name__)
            return func(*args, **(kwargs or {}))

    x = lib.ones(3, 1, 2)
    with Log():
        for m in (lib.nn.GRU(2, 3), lib.nn.RNN(2, 3), lib.nn.RNN(2, 3, nonlinearity="relu"),
                  lib.nn.LSTM(2, 3)):
            m(x)
    assert [n for n in names if n in GATES] == ["gru", "rnn_tanh", "rnn_relu", "lstm"]


def test_module_refuses_an_empty_sequence_as_torch():
    for lib in LIBS.values():
        with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0"):
            lib.nn.GRU(3, 4)(lib.zeros(0, 2, 3))
