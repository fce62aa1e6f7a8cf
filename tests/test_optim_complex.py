"""Optimizers on complex parameters, against torch: each of the real and imaginary parts gets
its own state (torch's optimizers work on ``view_as_real`` of the parameter, its gradient and
its state), so adaptive methods differ from a ``|g|^2`` formulation."""

import numpy as np
import pytest
import torch

import ndgrad

CASES = {
    "SGD": dict(lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True),
    "Adam": dict(lr=0.1, amsgrad=True, weight_decay=0.05),
    "AdamW": dict(lr=0.1, maximize=True),
    "Adagrad": dict(lr=0.1, lr_decay=0.01),
    "Adadelta": dict(lr=1.0),
    "Adamax": dict(lr=0.1),
    "ASGD": dict(lr=0.1, t0=1),
    "NAdam": dict(lr=0.1, decoupled_weight_decay=True, weight_decay=0.1),
    "RAdam": dict(lr=0.1),
    "RMSprop": dict(lr=0.01, centered=True, momentum=0.5),
    "Rprop": dict(lr=0.1),
    "LBFGS": dict(lr=0.5, max_iter=3),
}


def _run(lib, name):
    w = lib.tensor([0.5 + 1j, -1j, 2.0 + 0.25j], dtype=lib.complex128, requires_grad=True)
    r = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
    opt = getattr(lib.optim, name)([w, r], **CASES[name])
    for _ in range(8):
        def closure():
            opt.zero_grad()
            loss = (w.real ** 3).sum() + (2 * w.imag).sum() + (w.abs() ** 2).sum() + (r ** 4).sum()
            loss.backward()
            return loss
        opt.step(closure)
    state = [np.asarray(v.detach().numpy()) for v in opt.state[w].values()
             if isinstance(v, lib.Tensor) and v.ndim > 0] if name != "LBFGS" else []
    return np.asarray(w.detach().numpy()), np.asarray(r.detach().numpy()), state


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_parameters_update_as_pairs_of_reals(name):
    ew, er, es = _run(torch, name)
    aw, ar, as_ = _run(ndgrad, name)
    np.testing.assert_allclose(aw, ew, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ar, er, rtol=1e-10, atol=1e-12)
    assert len(as_) == len(es)
    for a, e in zip(as_, es):
        assert a.dtype == e.dtype          # the state stays complex, shaped like the parameter
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12)
