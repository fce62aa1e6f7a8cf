"""Gaussian-process regression: RBF kernel hyperparameters fit by the log marginal likelihood."""

import math
import torch

torch.manual_seed(8)
torch.set_default_dtype(torch.float64)
X = torch.linspace(0, 5, 25).unsqueeze(1)
y = torch.sin(2 * X).squeeze() + 0.1 * torch.randn(25)
log_ls = torch.tensor(0.0, requires_grad=True)
log_sf = torch.tensor(0.0, requires_grad=True)
log_sn = torch.tensor(-1.0, requires_grad=True)
opt = torch.optim.Adam([log_ls, log_sf, log_sn], lr=0.05)


def kernel(a, b):
    d2 = torch.cdist(a / log_ls.exp(), b / log_ls.exp()).pow(2)
    return log_sf.exp().pow(2) * torch.exp(-0.5 * d2)


for it in range(60):
    opt.zero_grad()
    K = kernel(X, X) + log_sn.exp().pow(2) * torch.eye(25)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y.unsqueeze(1), L)
    nll = (
        0.5 * (y.unsqueeze(0) @ alpha).squeeze()
        + L.diagonal().log().sum()
        + 12.5 * math.log(2 * math.pi)
    )
    nll.backward()
    opt.step()
    if it % 20 == 0:
        print(it, round(nll.item(), 6), [round(p.item(), 5) for p in (log_ls, log_sf, log_sn)])
Xs = torch.linspace(0, 5, 5).unsqueeze(1)
with torch.no_grad():
    K = kernel(X, X) + log_sn.exp().pow(2) * torch.eye(25)
    L = torch.linalg.cholesky(K)
    Ks = kernel(Xs, X)
    mean = Ks @ torch.cholesky_solve(y.unsqueeze(1), L)
    v = torch.linalg.solve_triangular(L, Ks.T, upper=False)
    var = kernel(Xs, Xs).diagonal() - v.pow(2).sum(0)
print(mean.squeeze(), var.clamp_min(0).sqrt())
H = torch.autograd.functional.hessian(lambda p: (kernel(X[:4], X[:4]) * p).sum(), torch.ones(4, 4))
print(H.abs().sum())
