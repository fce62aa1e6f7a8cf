"""Biostatistics-style models: a Cox proportional-hazards network (DeepSurv-style partial
likelihood with logcumsumexp over risk sets, Breslow ties), Harrell's concordance index, an
ordinal regression with cumulative-link (proportional odds) thresholds, and a Gaussian-process
classifier by the Laplace approximation (Rasmussen & Williams, Algorithm 3.1/3.2) with
cholesky, cholesky_solve and solve_triangular."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(17)
torch.set_default_dtype(torch.float64)

# ---------------------------------------------------------------- Cox model
n, d = 120, 5
X = torch.randn(n, d)
beta = torch.tensor([1.0, -0.5, 0.0, 0.3, 0.0])
hazard = torch.exp(X @ beta)
T = torch.distributions.Exponential(hazard).sample()
C = torch.distributions.Exponential(torch.full((n,), 0.3)).sample()
time = torch.minimum(T, C).round(decimals=1)       # rounded: tied event times
event = (T <= C).float()
print("events", int(event.sum().item()), "ties", n - torch.unique(time).numel())


def cox_ph_loss(log_h, time, event):
    order = torch.argsort(time, descending=True, stable=True)
    log_h, event = log_h[order], event[order]
    log_risk = torch.logcumsumexp(log_h, dim=0)       # risk set: everyone with t_j >= t_i
    return -((log_h - log_risk) * event).sum() / event.sum()


def cox_breslow_flip(log_h, time, event):
    order = torch.argsort(time, stable=True)
    log_h, t, event = log_h[order], time[order], event[order]
    log_risk = torch.logcumsumexp(log_h.flip(0), 0).flip(0)
    # ties: the risk set of a tied time includes all of them (first index of each time)
    first = torch.searchsorted(t, t, side="left")
    return -((log_h - log_risk[first]) * event).sum() / event.sum()


def concordance(risk, time, event):
    ti, tj = time[:, None], time[None, :]
    comparable = (ti < tj) & (event[:, None] == 1)
    conc = (risk[:, None] > risk[None, :]) & comparable
    ties = (risk[:, None] == risk[None, :]) & comparable
    return ((conc.sum() + 0.5 * ties.sum()) / comparable.sum()).item()


net = nn.Sequential(nn.Linear(d, 16), nn.SELU(), nn.AlphaDropout(0.1), nn.Linear(16, 1, bias=False))
opt = torch.optim.Adam(net.parameters(), lr=1e-2, weight_decay=1e-4)
for epoch in range(60):
    net.train()
    loss = cox_breslow_flip(net(X).squeeze(1), time, event)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 20 == 0:
        print(f"cox epoch {epoch} loss {loss.item():.6f}")
net.eval()
with torch.no_grad():
    r = net(X).squeeze(1)
    print("c-index", round(concordance(r, time, event), 6))
    print("losses", cox_ph_loss(r, time, event).item(), cox_breslow_flip(r, time, event).item())

# linear Cox fit by Newton's method with the exact Hessian
b = torch.zeros(d, requires_grad=True)
for _ in range(6):
    f = lambda bb: cox_breslow_flip(X @ bb, time, event)
    g = torch.autograd.grad(f(b), b)[0]
    H = torch.autograd.functional.hessian(f, b.detach())
    with torch.no_grad():
        b -= torch.linalg.solve(H, g)
print("newton beta", b.detach(), "grad norm", g.norm().item() < 1e-6)

# ---------------------------------------------------------------- ordinal regression
K = 4
z = X @ torch.tensor([1.5, -1.0, 0.5, 0.0, 0.0]) + 0.3 * torch.randn(n)
cuts = torch.tensor([-1.0, 0.0, 1.2])
yo = torch.bucketize(z, cuts)
print("ordinal counts", torch.bincount(yo, minlength=K))


class CumulativeLink(nn.Module):
    def __init__(self, d, K):
        super().__init__()
        self.lin = nn.Linear(d, 1, bias=False)
        self.first = nn.Parameter(torch.tensor([-1.0]))
        self.deltas = nn.Parameter(torch.zeros(K - 2))

    def thresholds(self):
        return torch.cumsum(torch.cat([self.first, F.softplus(self.deltas) + 1e-3]), 0)

    def forward(self, x):
        eta = self.lin(x)
        cdf = torch.sigmoid(self.thresholds()[None, :] - eta)          # P(y <= k)
        cdf = F.pad(cdf, (1, 1), value=0.0)
        cdf[:, -1] = 1.0
        return cdf[:, 1:] - cdf[:, :-1]


model = CumulativeLink(d, K)
opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=40, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    probs = model(X)
    loss = -torch.log(probs.gather(1, yo[:, None]).clamp_min(1e-12)).mean()
    loss.backward()
    return loss


print("ordinal nll", round(opt.step(closure).item(), 6), round(closure().item(), 6))
print("thresholds", model.thresholds().detach(), "w", model.lin.weight.detach())
print("ordinal acc", (model(X).argmax(1) == yo).double().mean().item())

# ---------------------------------------------------------------- GP classification
Xg = torch.rand(40, 2) * 4 - 2
yg = torch.where((Xg ** 2).sum(1) < 1.5, 1.0, -1.0)


def rbf(A, B, ell, sf2):
    return sf2 * torch.exp(-0.5 * torch.cdist(A / ell, B / ell) ** 2)


def laplace_mode(K, y, iters=20):
    f = torch.zeros_like(y)
    for _ in range(iters):
        pi = torch.sigmoid(f)
        W = pi * (1 - pi)
        sW = W.sqrt()
        L = torch.linalg.cholesky(torch.eye(len(y)) + sW[:, None] * K * sW[None, :])
        grad = (y + 1) / 2 - pi
        b = W * f + grad
        v = torch.cholesky_solve((sW * (K @ b))[:, None], L)[:, 0]
        a = b - sW * v
        f = K @ a
    logp = -0.5 * a @ f + F.logsigmoid(y * f).sum() - torch.log(torch.diagonal(L)).sum()
    return f, a, L, sW, logp


log_ell = torch.tensor(0.0, requires_grad=True)
log_sf2 = torch.tensor(0.0, requires_grad=True)
opt = torch.optim.Adam([log_ell, log_sf2], lr=0.1)
for it in range(15):
    K = rbf(Xg, Xg, log_ell.exp(), log_sf2.exp())
    f, a, L, sW, logZ = laplace_mode(K, yg)
    opt.zero_grad()
    (-logZ).backward()
    opt.step()
    if it % 5 == 0:
        print(f"gpc {it} log marginal {logZ.item():.6f}")
with torch.no_grad():
    K = rbf(Xg, Xg, log_ell.exp(), log_sf2.exp())
    f, a, L, sW, logZ = laplace_mode(K, yg)
    Xs = torch.tensor([[0.0, 0.0], [1.8, 1.8], [-1.0, 0.5]])
    Ks = rbf(Xs, Xg, log_ell.exp(), log_sf2.exp())
    pi = torch.sigmoid(f)
    mean = Ks @ ((yg + 1) / 2 - pi)
    v = torch.linalg.solve_triangular(L, sW[:, None] * Ks.T, upper=False)
    var = log_sf2.exp() - (v ** 2).sum(0)
    kappa = 1.0 / torch.sqrt(1 + math.pi * var / 8)      # probit approximation
    print("hyper", log_ell.exp().item(), log_sf2.exp().item())
    print("pred mean", mean, "var", var)
    print("p(y=1)", torch.sigmoid(kappa * mean))
