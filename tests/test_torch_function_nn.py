"""nn modules take part in the ``__torch_function__`` protocol as torch's do (Note [Module
entries] in ndgrad/nn/modules/_functional_entries.py): a subclass input reaches its handler
as the ``nn.functional`` call (``F.linear`` for ``nn.Linear``) and comes back out as the
subclass, with the values of a plain call; a ``TorchFunctionMode`` sees the same calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad

LIBS = {"ndgrad": ndgrad, "torch": torch}

# (label, module factory(nn), input shape, integer input)
MODULES = [
    ("Linear", lambda nn: nn.Linear(4, 2), (2, 3, 4), False),
    ("Bilinear", lambda nn: nn.Bilinear(4, 4, 2), (2, 4), False),
    ("Conv1d", lambda nn: nn.Conv1d(3, 2, 3, padding=1, padding_mode="circular"), (2, 3, 4),
     False),
    ("Conv2d", lambda nn: nn.Conv2d(3, 2, 3), (2, 3, 4, 4), False),
    ("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(3, 2, 2), (2, 3, 4), False),
    ("BatchNorm2d", lambda nn: nn.BatchNorm2d(3), (2, 3, 4, 4), False),
    ("InstanceNorm1d", lambda nn: nn.InstanceNorm1d(3), (2, 3, 4), False),
    ("LayerNorm", lambda nn: nn.LayerNorm(4), (2, 3, 4), False),
    ("GroupNorm", lambda nn: nn.GroupNorm(1, 3), (2, 3, 4), False),
    ("RMSNorm", lambda nn: nn.RMSNorm(4), (2, 3, 4), False),
    ("LocalResponseNorm", lambda nn: nn.LocalResponseNorm(2), (2, 3, 4), False),
    ("MaxPool2d", lambda nn: nn.MaxPool2d(2), (2, 3, 4, 4), False),
    ("AvgPool1d", lambda nn: nn.AvgPool1d(2), (2, 3, 4), False),
    ("LPPool1d", lambda nn: nn.LPPool1d(2, 2), (2, 3, 4), False),
    ("AdaptiveMaxPool1d", lambda nn: nn.AdaptiveMaxPool1d(2), (2, 3, 4), False),
    ("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d(1), (2, 3, 4, 4), False),
    ("Upsample", lambda nn: nn.Upsample(scale_factor=2), (2, 3, 4, 4), False),
    ("Unfold", lambda nn: nn.Unfold(2), (2, 3, 4, 4), False),
    ("Fold", lambda nn: nn.Fold((3, 3), 2), (1, 8, 4), False),
    ("Embedding", lambda nn: nn.Embedding(5, 2), (2, 3), True),
    ("EmbeddingBag", lambda nn: nn.EmbeddingBag(5, 2), (2, 3), True),
    ("RNNCell", lambda nn: nn.RNNCell(4, 3), (2, 4), False),
    ("LSTMCell", lambda nn: nn.LSTMCell(4, 3), (2, 4), False),
    ("GRUCell", lambda nn: nn.GRUCell(4, 3), (2, 4), False),
    ("MultiheadAttention", lambda nn: nn.MultiheadAttention(4, 2), (3, 2, 4), False),
    ("LSTM", lambda nn: nn.LSTM(4, 3, num_layers=2), (5, 2, 4), False),
    ("LSTM-proj", lambda nn: nn.LSTM(4, 3, proj_size=2, batch_first=True), (2, 5, 4), False),
    ("GRU", lambda nn: nn.GRU(4, 3, bidirectional=True), (5, 2, 4), False),
    ("RNN", lambda nn: nn.RNN(4, 3), (5, 2, 4), False),
    ("RNN-relu", lambda nn: nn.RNN(4, 3, nonlinearity="relu"), (5, 2, 4), False),
]


def _run(lib, factory, shape, integer):
    log: list = []

    class Sub(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    lib.manual_seed(0)
    m = factory(lib.nn)
    x = (lib.arange(int(np.prod(shape))).reshape(shape) % 5 if integer
         else lib.linspace(-2.0, 2.0, int(np.prod(shape))).reshape(shape))
    args = (x,) * (3 if isinstance(m, lib.nn.MultiheadAttention) else
                   2 if isinstance(m, lib.nn.Bilinear) else 1)
    plain = m(*args)
    log.clear()
    out = m(*(a.as_subclass(Sub) for a in args))
    first = out[0] if isinstance(out, tuple) else out
    plain = plain[0] if isinstance(plain, tuple) else plain
    functional = [n for n in log if not n.startswith("__") and n not in ("dim", "size")]
    return type(first).__name__, functional[:1], first.detach().numpy(), plain.detach().numpy()


@pytest.mark.parametrize("label, factory, shape, integer", MODULES,
                         ids=[m[0] for m in MODULES])
def test_module_dispatches_as_torch(label, factory, shape, integer):
    ours = _run(ndgrad, factory, shape, integer)
    theirs = _run(torch, factory, shape, integer)
    assert ours[:2] == theirs[:2] == ("Sub", ours[1]) and ours[1], (ours[:2], theirs[:2])
    np.testing.assert_allclose(ours[2], ours[3], rtol=1e-6)      # the subclass's values


@pytest.mark.parametrize("lib", LIBS.values(), ids=LIBS.keys())
def test_mode_sees_module_calls(lib):
    names: list = []

    class Log(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            names.append(func.__name__)
            return func(*args, **(kwargs or {}))

    m = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.LayerNorm(2), lib.nn.Conv1d(1, 1, 1))
    x = lib.ones(1, 3)
    with Log():
        y = m(x)
    assert y.shape == (1, 2)
    assert [n for n in names if n in ("linear", "layer_norm", "conv1d")] == [
        "linear", "layer_norm", "conv1d"]


@pytest.mark.parametrize("lib", LIBS.values(), ids=LIBS.keys())
def test_handler_result_replaces_module_output(lib):
    linear = lib.nn.functional.linear

    class Swallow(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "handled" if func is linear else NotImplemented

    x = lib.ones(2, 3).as_subclass(Swallow)
    assert lib.nn.Linear(3, 2)(x) == "handled"
    with pytest.raises(TypeError):
        lib.nn.Conv1d(2, 1, 1)(x)


def test_toplevel_compat_functions_dispatch_the_protocol():
    """``ndgrad.kl_div``, ``ndgrad.lstm_cell`` ... (torch's builtins) call a subclass's
    ``__torch_function__`` with themselves as ``func``, as torch's do."""
    seen = []

    class Logged(ndgrad.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    x = ndgrad.randn(2, 3).as_subclass(Logged)
    ndgrad.kl_div(x, ndgrad.randn(2, 3))
    h = ndgrad.zeros(2, 4)
    ndgrad.lstm_cell(x, (h, h), ndgrad.randn(16, 3), ndgrad.randn(16, 4))
    assert ndgrad.kl_div in seen and ndgrad.lstm_cell in seen
