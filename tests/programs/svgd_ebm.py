"""Stein variational gradient descent (Liu & Wang 2016) on a 2-D Gaussian mixture with an RBF
kernel and the median heuristic (cdist, autograd of the kernel), then a small energy-based
model trained by contrastive divergence with short-run Langevin chains and a replay buffer."""

import math
import torch
import torch.nn as nn
import torch.distributions as D

torch.manual_seed(7)

mix = D.MixtureSameFamily(
    D.Categorical(torch.tensor([0.3, 0.7])),
    D.Independent(D.Normal(torch.tensor([[-2.0, 0.0], [2.0, 1.0]]), torch.ones(2, 2) * 0.7), 1),
)


def rbf_kernel(x):
    d2 = torch.cdist(x, x) ** 2
    h = torch.median(d2.detach()) / math.log(x.shape[0] + 1)
    return torch.exp(-d2 / h)


class SVGD:
    def __init__(self, log_prob, optimizer):
        self.log_prob = log_prob
        self.optim = optimizer

    def phi(self, X):
        X = X.detach().requires_grad_(True)
        log_p = self.log_prob(X)
        score = torch.autograd.grad(log_p.sum(), X)[0]
        Xc = X.detach().requires_grad_(True)
        K = rbf_kernel(Xc)
        grad_K = -torch.autograd.grad(K.sum(), Xc)[0]
        return (K.detach().matmul(score) + grad_K) / X.size(0)

    def step(self, X):
        self.optim.zero_grad()
        X.grad = -self.phi(X)
        self.optim.step()


X = torch.randn(50, 2) * 0.5
X.requires_grad_(False)
svgd = SVGD(mix.log_prob, torch.optim.Adam([X], lr=0.1))
for it in range(120):
    svgd.step(X)
    if it % 40 == 0:
        print(f"svgd {it:3d} mean {X.mean(0).tolist()} logp {mix.log_prob(X).mean().item():.4f}")
print("svgd final mean", X.mean(0), "std", X.std(0))
print("fraction right mode", (X[:, 0] > 0).float().mean().item())

# energy-based model: E(x) is a small MLP; data = ring of radius 2
n = 256
theta = torch.rand(n) * 2 * math.pi
data = torch.stack([2 * theta.cos(), 2 * theta.sin()], 1) + 0.1 * torch.randn(n, 2)


class Energy(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(2, 32), nn.SiLU(), nn.Linear(32, 32), nn.SiLU(),
                               nn.Linear(32, 1))

    def forward(self, x):
        return self.f(x).squeeze(-1)


def langevin(model, x, steps=15, step_size=0.05, noise=0.01):
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    x = x.clone().detach().requires_grad_(True)
    for _ in range(steps):
        x.data.add_(noise * torch.randn_like(x))
        x.data.clamp_(-3.0, 3.0)
        e = model(x).sum()
        e.backward()
        x.grad.data.clamp_(-0.1, 0.1)
        x.data.add_(-step_size * x.grad.data)
        x.grad.detach_()
        x.grad.zero_()
    for p in model.parameters():
        p.requires_grad_(True)
    model.train()
    return x.detach()


model = Energy()
opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.0, 0.999))
buffer = torch.rand(512, 2) * 6 - 3
for it in range(30):
    idx = torch.randint(0, 512, (64,))
    fresh = torch.rand(64) < 0.05
    init = torch.where(fresh[:, None], torch.rand(64, 2) * 6 - 3, buffer[idx])
    neg = langevin(model, init)
    buffer[idx] = neg
    pos = data[torch.randperm(n)[:64]]
    e_pos, e_neg = model(pos), model(neg)
    reg = 0.1 * (e_pos ** 2 + e_neg ** 2).mean()
    cdiv = e_pos.mean() - e_neg.mean()
    loss = cdiv + reg
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 10 == 0 or it == 29:
        print(f"ebm {it:2d} cdiv {cdiv.item():.5f} reg {reg.item():.5f}")
print("buffer radius", buffer.norm(dim=1).mean().item())
with torch.no_grad():
    grid = torch.stack(torch.meshgrid(torch.linspace(-3, 3, 4), torch.linspace(-3, 3, 4),
                                      indexing="ij"), -1).reshape(-1, 2)
    print("energy grid", model(grid).reshape(4, 4))
