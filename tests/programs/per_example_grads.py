"""Per-example gradients with torch.func (functional_call, grad, vmap), as in DP-SGD."""
import torch
import torch.nn as nn
from torch.func import functional_call, grad, vmap, jacrev, hessian

torch.manual_seed(11)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}
x = torch.randn(6, 4)
y = torch.randint(0, 3, (6,))


def loss_fn(p, b, xi, yi):
    out = functional_call(model, (p, b), (xi.unsqueeze(0),))
    return nn.functional.cross_entropy(out, yi.unsqueeze(0))


per_ex = vmap(grad(loss_fn), in_dims=(None, None, 0, 0))(params, buffers, x, y)
for k, g in per_ex.items():
    print(k, tuple(g.shape), f"{g.norm().item():.6f}")

# the mean of per-example gradients is the batch gradient
model.zero_grad()
nn.functional.cross_entropy(model(x), y).backward()
for k, p in model.named_parameters():
    print(k, "matches", torch.allclose(per_ex[k].mean(0), p.grad, atol=1e-6))

# clip each example's gradient and average (DP-SGD step without noise)
norms = torch.stack([g.flatten(1).norm(dim=1) for g in per_ex.values()]).norm(dim=0)
factor = (1.0 / norms).clamp(max=1.0)
clipped = {k: (g * factor.view(-1, *[1] * (g.dim() - 1))).mean(0) for k, g in per_ex.items()}
print("norms", norms.numpy().round(5).tolist())
print("clipped", clipped["2.bias"].tolist())

# Jacobian and Hessian of a small function
f = lambda v: (v.sin() * v.sum()).sum()
v = torch.randn(3, dtype=torch.float64)
print("jacrev", jacrev(lambda v: v.sin() * v.sum())(v).numpy().round(6).tolist())
print("hessian", hessian(f)(v).numpy().round(6).tolist())
