"""hardsigmoid's backward under create_graph: torch records a NotImplemented node whose
derivative (backward and forward mode) raises."""

import pytest
import torch

import ndgrad


def _grad(lib, gg_requires_grad=False):
    x = lib.tensor([-4.0, -3.0, 0.0, 1.0, 3.0], dtype=lib.float64, requires_grad=True)
    gg = lib.ones(5, dtype=lib.float64, requires_grad=gg_requires_grad)
    g, = lib.autograd.grad(lib.nn.functional.hardsigmoid(x), x, gg, create_graph=True)
    return x, gg, g


@pytest.mark.parametrize("lib", [ndgrad, torch])
def test_hardsigmoid_double_backward_raises_like_torch(lib):
    x, gg, g = _grad(lib, True)
    assert g.requires_grad
    assert g.grad_fn.name() == "torch::autograd::NotImplemented"
    assert type(g.grad_fn).__name__ == "NotImplemented"
    assert g.tolist() == pytest.approx([0.0, 0.0, 1 / 6, 1 / 6, 0.0])
    for wrt in (x, gg):
        with pytest.raises(RuntimeError,
                           match="derivative for aten::hardsigmoid_backward is not implemented"):
            lib.autograd.grad(g.sum(), wrt, retain_graph=True)


@pytest.mark.parametrize("lib", [ndgrad, torch])
def test_hardsigmoid_second_order_func_errors(lib):
    x = lib.tensor([-4.0, 0.0, 1.0], dtype=lib.float64)
    hs = lib.nn.functional.hardsigmoid
    with pytest.raises(NotImplementedError, match="Trying to use forward AD with "
                       "aten::hardsigmoid_backward that does not support it"):
        lib.func.jacfwd(lib.func.jacrev(hs))(x)
    with pytest.raises(RuntimeError, match="derivative for aten::hardsigmoid_backward"):
        lib.func.jacrev(lib.func.jacrev(hs))(x)
    assert lib.func.jacrev(hs)(x).diagonal().tolist() == pytest.approx([0, 1 / 6, 1 / 6])


def test_hardsigmoid_first_order_unchanged():
    x, _, g = _grad(ndgrad)
    gt = _grad(torch)[2]
    assert g.tolist() == gt.tolist()
    x = ndgrad.tensor([-1.0, 2.0], requires_grad=True)
    ndgrad.nn.functional.hardsigmoid(x).sum().backward()
    assert x.grad.tolist() == pytest.approx([1 / 6, 1 / 6])
