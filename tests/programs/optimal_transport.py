"""Computational optimal transport as in the POT / "Computational OT" notebooks: entropic
Sinkhorn in the log domain (logsumexp, cdist), the Sinkhorn divergence with its gradient used
to flow a point cloud, 1-D Wasserstein distances from sorted samples and quantile functions,
an exact assignment check by brute force over permutations, and a free-support barycenter."""

import itertools
import torch

torch.manual_seed(1)
torch.set_default_dtype(torch.float64)


def sinkhorn(x, y, eps=0.1, iters=200, a=None, b=None):
    C = torch.cdist(x, y, p=2) ** 2
    n, m = C.shape
    log_a = torch.full((n,), -torch.log(torch.tensor(float(n)))) if a is None else a.log()
    log_b = torch.full((m,), -torch.log(torch.tensor(float(m)))) if b is None else b.log()
    f = torch.zeros(n)
    g = torch.zeros(m)
    for _ in range(iters):
        f = -eps * torch.logsumexp((g[None, :] - C) / eps + log_b[None, :], dim=1)
        g = -eps * torch.logsumexp((f[:, None] - C) / eps + log_a[:, None], dim=0)
    P = torch.exp((f[:, None] + g[None, :] - C) / eps + log_a[:, None] + log_b[None, :])
    return (P * C).sum(), P, f, g


x = torch.randn(12, 2)
y = torch.randn(10, 2) + torch.tensor([2.0, 0.5])
cost, P, f, g = sinkhorn(x, y)
print("cost", round(cost.item(), 6), P.shape)
print("marginals", P.sum(1)[:4], P.sum(0)[:4])
print("plan argmax", P.argmax(1))
print("duals", f[:3], g[:3])

# Sinkhorn divergence: debiased, used as a loss to move a cloud onto a target
def divergence(a, b, eps=0.5):
    return sinkhorn(a, b, eps, 30)[0] - 0.5 * sinkhorn(a, a, eps, 30)[0] - 0.5 * sinkhorn(
        b, b, eps, 30)[0]


z = x.clone().requires_grad_(True)
opt = torch.optim.SGD([z], lr=2.0)
for step in range(10):
    loss = divergence(z, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print("flow", step, round(loss.item(), 6), z.grad.norm().item() > 0)
print("moved mean", z.detach().mean(0), y.mean(0))

# exact OT with uniform weights and equal sizes is an assignment problem
xs = torch.randn(5, 2)
ys = torch.randn(5, 2)
C = torch.cdist(xs, ys).pow(2)
best = min(itertools.permutations(range(5)), key=lambda p: C[torch.arange(5), list(p)].sum().item())
print("assignment", best, round(C[torch.arange(5), list(best)].sum().item() / 5, 6))
_, Pe, _, _ = sinkhorn(xs, ys, eps=0.02, iters=150)
print("sinkhorn ~ assignment", Pe.argmax(1).tolist() == list(best), round((Pe * C).sum().item(), 4))

# 1-D Wasserstein: sort both samples; W_p between empirical quantile functions
u = torch.randn(200)
v = 0.5 * torch.randn(300) + 1.0
qs = torch.linspace(0.005, 0.995, 100)
w1 = (torch.quantile(u, qs) - torch.quantile(v, qs)).abs().mean()
us, _ = torch.sort(u)
w2_same = (us - torch.sort(torch.randn(200))[0]).pow(2).mean().sqrt()
print("w1d", round(w1.item(), 6), round(w2_same.item(), 6))
cu = torch.searchsorted(us, torch.tensor([-1.0, 0.0, 1.0])) / 200.0
print("ecdf", cu, torch.bucketize(torch.tensor([0.0]), us, right=True))

# free-support barycenter of three clouds, by gradient descent on the sum of OT costs
clouds = [torch.randn(8, 2) * 0.3 + c for c in (torch.tensor([0.0, 0.0]), torch.tensor(
    [2.0, 0.0]), torch.tensor([1.0, 2.0]))]
bar = torch.randn(6, 2).requires_grad_(True)
opt = torch.optim.Adam([bar], lr=0.1)
for _ in range(12):
    loss = sum(sinkhorn(bar, c, eps=0.05, iters=30)[0] for c in clouds) / 3
    opt.zero_grad()
    loss.backward()
    opt.step()
print("barycenter", round(loss.item(), 5), bar.detach().mean(0))
w = torch.softmax(torch.randn(7), 0)
cost_w, Pw, _, _ = sinkhorn(torch.randn(7, 3), torch.randn(4, 3), eps=0.2, a=w,
                            b=torch.full((4,), 0.25))
print("weighted", round(cost_w.item(), 6), torch.allclose(Pw.sum(1), w, atol=1e-6))
