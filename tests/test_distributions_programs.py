"""Whole programs written against torch.distributions, run with torch and with ndgrad on the
same seed: a Gaussian mixture fitted by maximum likelihood and a small normalizing flow
(learnable affine and tanh transforms on a normal base)."""

import numpy as np

import ndgrad
import torch


def _mixture_fit(lib):
    D = lib.distributions
    lib.manual_seed(0)
    data = lib.cat([lib.randn(40, dtype=lib.float64) - 2, lib.randn(60, dtype=lib.float64) + 1])
    logits = lib.zeros(3, dtype=lib.float64, requires_grad=True)
    loc = lib.tensor([-1.0, 0.0, 1.0], dtype=lib.float64, requires_grad=True)
    log_scale = lib.zeros(3, dtype=lib.float64, requires_grad=True)
    opt = lib.optim.SGD([logits, loc, log_scale], lr=0.2, momentum=0.5)
    losses = []
    for _ in range(5):
        mix = D.MixtureSameFamily(D.Categorical(logits=logits),
                                  D.Normal(loc, log_scale.exp()))
        loss = -mix.log_prob(data).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [t.detach().numpy().copy() for t in (logits, loc, log_scale)]


def _flow_fit(lib):
    D = lib.distributions
    lib.manual_seed(1)
    target = (lib.rand(64, 2, dtype=lib.float64) * 1.6 - 0.8)
    shift = lib.zeros(2, dtype=lib.float64, requires_grad=True)
    log_scale = lib.zeros(2, dtype=lib.float64, requires_grad=True)
    opt = lib.optim.SGD([shift, log_scale], lr=0.05)
    base = D.Independent(D.Normal(lib.zeros(2, dtype=lib.float64),
                                  lib.ones(2, dtype=lib.float64)), 1)
    losses = []
    for _ in range(5):
        flow = D.TransformedDistribution(
            base, [D.AffineTransform(shift, log_scale.exp(), event_dim=1),
                   D.TanhTransform()])
        loss = -flow.log_prob(target).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    draws = flow.sample((3,))
    return losses, [shift.detach().numpy().copy(), log_scale.detach().numpy().copy(),
                    draws.numpy().copy()]


def _compare(program):
    (tl, tp), (nl, np_) = program(torch), program(ndgrad)
    np.testing.assert_allclose(nl, tl, rtol=1e-10)
    for a, b in zip(np_, tp):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_gaussian_mixture_fit_follows_torch():
    _compare(_mixture_fit)


def test_normalizing_flow_fit_follows_torch():
    _compare(_flow_fit)
