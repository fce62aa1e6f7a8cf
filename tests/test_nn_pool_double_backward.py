"""Double backward through pooling and prelu keeps the input in the graph, like PyTorch
(Note [Input ties] in ndgrad/ops/_second_order.py)."""

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd.gradcheck import gradgradcheck

RNG = np.random.default_rng(0)
X1 = RNG.standard_normal((2, 3, 8))
X2 = RNG.standard_normal((2, 3, 6, 6))
X3 = RNG.standard_normal((1, 2, 4, 4, 4))
SAMPLES = RNG.random((2, 3, 2))


def _cases(lib):
    F = lib.nn.functional
    smp = lib.tensor(SAMPLES)
    return {
        "max_pool1d": (X1, lambda x: F.max_pool1d(x, 2)),
        "max_pool2d": (X2, lambda x: F.max_pool2d(x, 2)),
        "max_pool2d_overlap": (X2, lambda x: F.max_pool2d(x, 3, 1, padding=1)),
        "max_pool3d": (X3, lambda x: F.max_pool3d(x, 2)),
        "avg_pool1d": (X1, lambda x: F.avg_pool1d(x, 3, 2)),
        "avg_pool2d": (X2, lambda x: F.avg_pool2d(x, 2)),
        "avg_pool3d": (X3, lambda x: F.avg_pool3d(x, 2)),
        "adaptive_avg_pool1d": (X1, lambda x: F.adaptive_avg_pool1d(x, 3)),
        "adaptive_avg_pool2d": (X2, lambda x: F.adaptive_avg_pool2d(x, 4)),
        "adaptive_avg_pool3d": (X3, lambda x: F.adaptive_avg_pool3d(x, 3)),
        "adaptive_max_pool1d": (X1, lambda x: F.adaptive_max_pool1d(x, 3)),
        "adaptive_max_pool2d": (X2, lambda x: F.adaptive_max_pool2d(x, 4)),
        "adaptive_max_pool3d": (X3, lambda x: F.adaptive_max_pool3d(x, 3)),
        "fractional_max_pool2d": (X2, lambda x: F.fractional_max_pool2d(
            x, 2, output_size=3, _random_samples=smp)),
        "interpolate_area": (X2, lambda x: F.interpolate(x, scale_factor=0.5, mode="area")),
        "interpolate_bilinear": (X2, lambda x: F.interpolate(x, scale_factor=2,
                                                              mode="bilinear")),
        "prelu": (X2, lambda x: F.prelu(x, lib.tensor([0.25, -0.5, 2.0], dtype=lib.float64))),
        "max_unpool2d": (RNG.standard_normal((2, 3, 3, 3)), lambda x: F.max_unpool2d(
            x, F.max_pool2d(lib.tensor(X2), 2, return_indices=True)[1], 2)),
    }


def _second(lib, name):
    data, fn = _cases(lib)[name]
    x = lib.tensor(data).requires_grad_()
    g, = lib.autograd.grad(fn(x).sum(), x, create_graph=True)
    fn_ = g.grad_fn
    names = None if fn_ is None else [None if n is None else type(n).__name__
                                      for n, _ in fn_.next_functions]
    gg = lib.autograd.grad(g.sum(), x)[0].numpy() if g.requires_grad else None
    return g.requires_grad, None if fn_ is None else type(fn_).__name__, names, gg


@pytest.mark.parametrize("name", list(_cases(torch)))
def test_second_order_graph_matches_torch(name):
    rg, node, nexts, gg = _second(ndgrad, name)
    trg, tnode, tnexts, tgg = _second(torch, name)
    assert (rg, node) == (trg, tnode)
    if name != "prelu":           # torch's prelu node has one more (unused weight) edge
        assert nexts == tnexts
    if tgg is None:
        assert gg is None
    else:
        np.testing.assert_allclose(gg, tgg)


@pytest.mark.parametrize("name", ["max_pool2d_overlap", "avg_pool3d", "adaptive_avg_pool2d",
                                  "adaptive_max_pool1d", "fractional_max_pool2d"])
def test_gradgradcheck(name):
    data, fn = _cases(ndgrad)[name]
    x = ndgrad.tensor(data).requires_grad_()
    assert gradgradcheck(fn, (x,))


def test_prelu_gradgradcheck_with_weight():
    F = ndgrad.nn.functional
    x = ndgrad.tensor(X2[:1, :, :3, :3]).requires_grad_()
    w = ndgrad.tensor([0.25, -0.5, 2.0], dtype=ndgrad.float64, requires_grad=True)
    assert gradgradcheck(F.prelu, (x, w))
    xt = torch.tensor(X2[:1, :, :3, :3]).requires_grad_()
    wt = torch.tensor([0.25, -0.5, 2.0], dtype=torch.float64, requires_grad=True)
    gs = ndgrad.autograd.grad(F.prelu(x, w).pow(2).sum(), (x, w), create_graph=True)
    gts = torch.autograd.grad(torch.nn.functional.prelu(xt, wt).pow(2).sum(), (xt, wt),
                              create_graph=True)
    for a, b in zip(ndgrad.autograd.grad(sum(g.sum() for g in gs), (x, w)),
                    torch.autograd.grad(sum(g.sum() for g in gts), (xt, wt))):
        np.testing.assert_allclose(a.numpy(), b.numpy())


def test_first_order_backward_records_nothing():
    x = ndgrad.tensor(X2).requires_grad_()
    g, = ndgrad.autograd.grad(ndgrad.nn.functional.max_pool2d(x, 2).sum(), x)
    assert not g.requires_grad and g.grad_fn is None
