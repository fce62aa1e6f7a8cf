"""Quasi-Monte Carlo and Bayesian optimization as in BoTorch-style research code: Sobol'
points from torch.quasirandom.SobolEngine (plain and scrambled) for integration error
against pseudo-random Monte Carlo, a Gaussian-process surrogate with Cholesky solves, the
expected-improvement acquisition through Normal.cdf/log_prob, Sobol' candidate sets refined
by Adam with box constraints, and the optimization trace on the Branin function."""

import math
import torch
from torch.quasirandom import SobolEngine

torch.manual_seed(2)
torch.set_default_dtype(torch.float64)


def branin(x):
    x1 = 15 * x[..., 0] - 5
    x2 = 15 * x[..., 1]
    return ((x2 - 5.1 / (4 * math.pi ** 2) * x1 ** 2 + 5 / math.pi * x1 - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * torch.cos(x1) + 10)


# integration of a smooth function over [0, 1]^4: QMC converges faster than MC
def integrand(u):
    return torch.prod(1 + 0.5 * (u - 0.5) * torch.cos(3 * u), dim=-1)


exact = (1 + 0.5 * (torch.sin(torch.tensor(3.0)) / 3 + (torch.cos(torch.tensor(3.0)) - 1) / 9
                    - 0.5 * torch.sin(torch.tensor(3.0)) / 3)) ** 4
sob = SobolEngine(4)
print("engine", sob, SobolEngine(4, scramble=True, seed=1))
for m in (6, 8, 10):
    n = 2 ** m
    q = integrand(SobolEngine(4).draw(n))
    rq = torch.stack([integrand(SobolEngine(4, scramble=True, seed=s).draw(n)).mean()
                      for s in range(4)])
    mc = integrand(torch.rand(n, 4)).mean()
    errs = [(q.mean() - exact).abs(), (rq - exact).abs().max(), (mc - exact).abs()]
    print("n", n, [f"{v.item():.3e}" for v in errs])
pts = SobolEngine(2, scramble=True, seed=5).draw_base2(4)
print("stratified", torch.histc(pts[:, 0], bins=4, min=0, max=1),
      torch.bincount((pts * 4).long().clamp_max(3).mul(torch.tensor([4, 1])).sum(1),
                     minlength=16).max())
e = SobolEngine(3, scramble=True, seed=9)
a = e.draw(5)
e.reset()
e.fast_forward(2)
print("ff", torch.equal(e.draw(3), a[2:]), e.num_generated, a.dtype)


class GP:
    def __init__(self, X, y, ls=0.2, noise=1e-6):
        self.X, self.mu, self.sd = X, y.mean(), y.std()
        self.ls = ls
        Y = (y - self.mu) / self.sd
        K = self.k(X, X) + noise * torch.eye(len(X))
        self.L = torch.linalg.cholesky(K)
        self.alpha = torch.cholesky_solve(Y.unsqueeze(1), self.L)

    def k(self, a, b):
        return torch.exp(-0.5 * torch.cdist(a, b).pow(2) / self.ls ** 2)

    def posterior(self, x):
        Ks = self.k(x, self.X)
        mean = (Ks @ self.alpha).squeeze(-1)
        v = torch.linalg.solve_triangular(self.L, Ks.T, upper=False)
        var = (1 - v.pow(2).sum(0)).clamp_min(1e-12)
        return mean * self.sd + self.mu, var.sqrt() * self.sd


def expected_improvement(gp, x, best):
    mean, sd = gp.posterior(x)
    z = (best - mean) / sd
    n = torch.distributions.Normal(0.0, 1.0)
    return sd * (z * n.cdf(z) + n.log_prob(z).exp())


X = SobolEngine(2, scramble=True, seed=0).draw(6)
y = branin(X)
for it in range(8):
    gp = GP(X, y)
    cand = SobolEngine(2, scramble=True, seed=100 + it).draw(256)
    ei = expected_improvement(gp, cand, y.min())
    starts = cand[ei.topk(3).indices].clone().requires_grad_(True)
    opt = torch.optim.Adam([starts], lr=0.02)
    for _ in range(15):
        loss = -expected_improvement(gp, starts, y.min()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            starts.clamp_(0, 1)
    with torch.no_grad():
        final = expected_improvement(gp, starts, y.min())
        x_new = starts[final.argmax()].unsqueeze(0).detach()
    X = torch.cat([X, x_new])
    y = torch.cat([y, branin(x_new)])
    print("bo", it, round(y.min().item(), 5), round(final.max().item(), 6), x_new.squeeze())
print("best", round(y.min().item(), 5), X[y.argmin()], "global min 0.397887")
