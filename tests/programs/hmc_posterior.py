"""Bayesian logistic regression: posterior sampling with Hamiltonian Monte Carlo (leapfrog,
autograd.grad of distributions' log_prob) and unadjusted Langevin dynamics; a Laplace check."""

import math
import torch
import torch.distributions as dist

torch.manual_seed(42)
torch.set_default_dtype(torch.float64)
N, D = 60, 3
X = torch.cat([torch.ones(N, 1), torch.randn(N, D - 1)], 1)
w_true = torch.tensor([0.5, -1.5, 2.0])
y = dist.Bernoulli(logits=X @ w_true).sample()
prior = dist.Normal(torch.zeros(D), 2.0 * torch.ones(D))
print("y mean", y.mean().item(), prior.batch_shape, prior.event_shape)


def log_post(w):
    return dist.Bernoulli(logits=X @ w).log_prob(y).sum() + prior.log_prob(w).sum()


def grad_log_post(w):
    w = w.detach().requires_grad_(True)
    lp = log_post(w)
    (g,) = torch.autograd.grad(lp, w)
    return lp.detach(), g


def hmc_step(w, step=0.05, L=10):
    p0 = torch.randn(D)
    lp0, g = grad_log_post(w)
    p = p0 + 0.5 * step * g
    x = w.clone()
    for i in range(L):
        x = x + step * p
        lp, g = grad_log_post(x)
        if i < L - 1:
            p = p + step * g
    p = p + 0.5 * step * g
    log_accept = (lp - 0.5 * p @ p) - (lp0 - 0.5 * p0 @ p0)
    if torch.rand(()).log() < log_accept:
        return x, True
    return w, False


w = torch.zeros(D)
samples, accepted = [], 0
for it in range(80):
    w, acc = hmc_step(w)
    accepted += int(acc)
    if it >= 20:
        samples.append(w)
S = torch.stack(samples)
print("accept", accepted, "mean", S.mean(0), "std", S.std(0))
print("ess-ish", round((S[1:] - S[:-1]).pow(2).mean().item(), 6))

# MAP by Newton's method, Laplace covariance from the Hessian
w_map = torch.zeros(D)
for _ in range(8):
    H = torch.autograd.functional.hessian(log_post, w_map)
    _, g = grad_log_post(w_map)
    w_map = w_map - torch.linalg.solve(H, g)
cov = torch.linalg.inv(-H)
print("map", w_map, "laplace sd", cov.diagonal().sqrt())
lap = dist.MultivariateNormal(w_map, covariance_matrix=cov)
print("laplace logp(map)", round(lap.log_prob(w_map).item(), 8), lap.entropy().item())

# unadjusted Langevin with a decreasing step, batch of 4 chains via vmap-free broadcasting
torch.manual_seed(7)
W = torch.zeros(4, D)
for k in range(40):
    eps = 0.01 / math.sqrt(1 + k)
    W = W.detach().requires_grad_(True)
    lp = dist.Bernoulli(logits=W @ X.T).log_prob(y).sum(1) + prior.log_prob(W).sum(1)
    (g,) = torch.autograd.grad(lp.sum(), W)
    W = W + eps * g + math.sqrt(2 * eps) * torch.randn_like(W)
print("ula", W.detach().mean(0), lp.detach())
print("student-t", dist.StudentT(3.0).log_prob(torch.tensor([0.0, 1.0, -2.5])))
g = dist.Gamma(torch.tensor([2.0]), torch.tensor([3.0]))
print("gamma", g.mean, g.variance, g.log_prob(torch.tensor([0.5])), g.cdf(torch.tensor([0.5])))
