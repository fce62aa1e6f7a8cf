"""Flow matching / rectified flow on a 2-D Gaussian mixture with an Euler and a midpoint (Heun)
sampler, a reflow step on the coupled pairs, and denoising / sliced score matching that takes
the divergence with torch.autograd.grad(create_graph=True), followed by Langevin sampling. The
style of the blog posts and course notebooks on the subject."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
centers = torch.tensor([[2.0, 0.0], [-1.0, 1.7320508], [-1.0, -1.7320508]])


def sample_target(n):
    comp = torch.randint(0, 3, (n,))
    return centers[comp] + 0.3 * torch.randn(n, 2)


class VelocityNet(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, hidden), nn.SiLU(), nn.Linear(hidden, hidden),
                                 nn.SiLU(), nn.Linear(hidden, 2))

    def forward(self, x, t):
        if t.dim() == 0:
            t = t.expand(x.shape[0])
        return self.net(torch.cat([x, t[:, None]], dim=-1))


def train_flow(model, pairs=None, steps=150, bs=256):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    for step in range(steps):
        if pairs is None:
            x0, x1 = torch.randn(bs, 2), sample_target(bs)
        else:
            i = torch.randint(0, pairs[0].shape[0], (bs,))
            x0, x1 = pairs[0][i], pairs[1][i]
        t = torch.rand(bs)
        xt = (1 - t[:, None]) * x0 + t[:, None] * x1
        loss = F.mse_loss(model(xt, t), x1 - x0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            print(f"  flow step {step:3d} loss {loss.item():.4f}")
    return model


@torch.no_grad()
def euler(model, x, n_steps):
    dt = 1.0 / n_steps
    for i in range(n_steps):
        t = torch.tensor(i * dt)
        x = x + dt * model(x, t)
    return x


@torch.no_grad()
def heun(model, x, n_steps):
    ts = torch.linspace(0, 1, n_steps + 1)
    for t0, t1 in zip(ts[:-1], ts[1:]):
        v0 = model(x, t0)
        x_pred = x + (t1 - t0) * v0
        x = x + (t1 - t0) * 0.5 * (v0 + model(x_pred, t1))
    return x


def mixture_nll(x):
    d = torch.cdist(x, centers) ** 2
    logp = torch.logsumexp(-d / (2 * 0.09), dim=1) - math.log(3) - math.log(2 * math.pi * 0.09)
    return -logp.mean()


print("rectified flow")
flow = train_flow(VelocityNet())
torch.manual_seed(1)
z = torch.randn(400, 2)
for n in (1, 4, 16):
    xs = euler(flow, z, n)
    print(f"euler {n:2d} steps: nll {mixture_nll(xs).item():.4f} "
          f"mean {[round(v, 3) for v in xs.mean(0).tolist()]}")
print(f"heun 4 steps: nll {mixture_nll(heun(flow, z, 4)).item():.4f}")

# reflow: couple noise with the model's own endpoints, then retrain on straight pairs
z_pairs = torch.randn(1024, 2)
x_pairs = euler(flow, z_pairs, 16)
straightness = ((x_pairs - z_pairs) - flow(z_pairs, torch.tensor(0.0))).pow(2).sum(1).mean()
print(f"straightness before reflow {straightness.item():.4f}")
print("reflow")
flow2 = train_flow(VelocityNet(), pairs=(z_pairs, x_pairs), steps=100)
print(f"reflow euler 1 step: nll {mixture_nll(euler(flow2, z, 1)).item():.4f}")


# score matching: a network s(x) ~ grad log p(x), trained with the sliced / exact trace loss
class ScoreNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 64), nn.Softplus(), nn.Linear(64, 64),
                                 nn.Softplus(), nn.Linear(64, 2))

    def forward(self, x):
        return self.net(x)


def exact_score_matching_loss(model, x):
    x = x.requires_grad_(True)
    s = model(x)
    trace = torch.zeros(x.shape[0])
    for i in range(x.shape[1]):
        trace = trace + torch.autograd.grad(s[:, i].sum(), x, create_graph=True)[0][:, i]
    return (0.5 * (s ** 2).sum(dim=1) + trace).mean()


def sliced_score_matching_loss(model, x):
    x = x.requires_grad_(True)
    v = torch.randn_like(x)
    s = model(x)
    sv = torch.sum(s * v)
    grad_sv = torch.autograd.grad(sv, x, create_graph=True)[0]
    return (torch.sum(grad_sv * v, dim=-1) + 0.5 * torch.sum(s * s, dim=-1)).mean()


def dsm_loss(model, x, sigma=0.3):
    noise = torch.randn_like(x) * sigma
    target = -noise / sigma ** 2
    return 0.5 * ((model(x + noise) - target) ** 2).sum(-1).mean() * sigma ** 2


torch.manual_seed(2)
score = ScoreNet()
opt = torch.optim.Adam(score.parameters(), lr=2e-3)
for step in range(120):
    x = sample_target(128)
    if step < 40:
        loss = exact_score_matching_loss(score, x)
    elif step < 80:
        loss = sliced_score_matching_loss(score, x)
    else:
        loss = dsm_loss(score, x)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 119:
        print(f"score step {step:3d} loss {loss.item():.4f}")


def langevin(model, x, n_steps=50, eps=0.01):
    for _ in range(n_steps):
        with torch.no_grad():
            x = x + 0.5 * eps * model(x) + math.sqrt(eps) * torch.randn_like(x)
    return x


xl = langevin(score, torch.randn(400, 2) * 2)
print(f"langevin nll {mixture_nll(xl).item():.4f} spread {xl.std().item():.4f}")
