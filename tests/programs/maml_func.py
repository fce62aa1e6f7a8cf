"""MAML on sine regression with torch.func: functional_call, grad through an inner SGD loop
(second order), vmap over tasks, a BatchNorm buffer passed in explicitly, and an outer Adam
loop with a cosine schedule and gradient clipping by value."""
import math

import torch
import torch.nn as nn
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(1, 32)
        self.bn = nn.BatchNorm1d(32, affine=False, track_running_stats=True)
        self.l2 = nn.Linear(32, 1)

    def forward(self, x):
        return self.l2(torch.tanh(self.bn(self.l1(x))))


net = Net().eval()                         # eval: the BatchNorm reads its buffers only
params = {k: v.detach() for k, v in net.named_parameters()}
buffers = {k: v.detach() for k, v in net.named_buffers()}


def loss_fn(p, x, y):
    return ((functional_call(net, (p, buffers), (x,)) - y) ** 2).mean()


def adapt(p, x, y, steps=2, lr=0.1):
    for _ in range(steps):
        g = grad(loss_fn)(p, x, y)
        p = {k: p[k] - lr * g[k] for k in p}
    return p


def task_loss(p, xs, ys, xq, yq):
    return loss_fn(adapt(p, xs, ys), xq, yq)


def tasks(n, k=10):
    amp = torch.rand(n, 1, 1) * 4.0 + 0.5
    phase = torch.rand(n, 1, 1) * math.pi
    x = torch.rand(n, 2 * k, 1) * 10.0 - 5.0
    y = amp * torch.sin(x + phase)
    return x[:, :k], y[:, :k], x[:, k:], y[:, k:]


meta = {k: v.clone().requires_grad_() for k, v in params.items()}
opt = torch.optim.Adam(meta.values(), lr=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)
for it in range(6):
    xs, ys, xq, yq = tasks(4)
    losses = vmap(task_loss, in_dims=(None, 0, 0, 0, 0))(meta, xs, ys, xq, yq)
    loss = losses.mean()
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_value_(meta.values(), 0.5)
    opt.step()
    sched.step()
    print(f"iter {it} meta-loss {loss.item():.6f} lr {sched.get_last_lr()[0]:.5f} "
          f"per-task {[round(v, 4) for v in losses.tolist()]}")

# a per-parameter meta-gradient, and the adapted model on one held-out task
xs, ys, xq, yq = tasks(1)
g = grad(task_loss)(meta, xs[0], ys[0], xq[0], yq[0])
print("meta-grad norms", {k: round(v.norm().item(), 5) for k, v in sorted(g.items())})
with torch.no_grad():
    before = loss_fn(meta, xq[0], yq[0]).item()
fast = adapt({k: v.detach() for k, v in meta.items()}, xs[0], ys[0], steps=5)
print(f"query loss before {before:.5f} after {loss_fn(fast, xq[0], yq[0]).item():.5f}")

# in training mode BatchNorm updates its running statistics in place: torch.func refuses to
# modify a buffer the transformed function captured
net.train()
try:
    grad(loss_fn)(params, xs[0], ys[0])
except RuntimeError as e:
    print("train-mode BatchNorm under grad:", str(e)[:47], "...", str(e)[-60:])
print("running mean untouched", bool((buffers["bn.running_mean"] == 0).all()))
