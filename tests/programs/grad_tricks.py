"""Gradient penalty, checkpointing, hooks, custom Function, parametrizations, ensembles."""

import copy

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint
from torch.func import functional_call, stack_module_state, vmap, jacrev

torch.manual_seed(13)
D = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
real, fake = torch.randn(8, 4), torch.randn(8, 4)
alpha = torch.rand(8, 1)
interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
(g,) = torch.autograd.grad(D(interp).sum(), interp, create_graph=True)
gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
gp.backward()
print("gp", round(gp.item(), 6), D[0].weight.grad.norm().item())

feats = {}
h = D[1].register_forward_hook(lambda m, i, o: feats.__setitem__("tanh", o.detach()))
D(real)
h.remove()
print("hooked", feats["tanh"].shape)
seen = []
x = torch.randn(3, requires_grad=True)
x.register_hook(lambda gr: seen.append(gr.clone()))
y = checkpoint(lambda t: torch.sin(t) * t, x, use_reentrant=False)
y.sum().backward()
print("ckpt", x.grad, len(seen))


class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo):
        ctx.save_for_backward(x)
        ctx.lo = lo
        return x.clamp(min=lo)

    @staticmethod
    def backward(ctx, go):
        (x,) = ctx.saved_tensors
        return go * (x >= ctx.lo), None


z = torch.linspace(-1, 1, 5, requires_grad=True)
Clip.apply(z, 0.0).pow(2).sum().backward()
print("custom", z.grad)

lin = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
print("wn", sorted(n for n, _ in lin.named_parameters()))
sn = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 4))
print("sn", round(torch.linalg.matrix_norm(sn.weight, 2).item(), 3))
vec = nn.utils.parameters_to_vector(D.parameters())
print("vec", vec.shape)

models = [nn.Linear(3, 2) for _ in range(4)]
params, buffers = stack_module_state(models)

base = copy.deepcopy(models[0])
xs = torch.randn(5, 3)
out = vmap(lambda p, b: functional_call(base, (p, b), (xs,)))(params, buffers)
print("ensemble", out.shape, torch.allclose(out[2], models[2](xs), atol=1e-6))
J = jacrev(lambda w: torch.tanh(xs @ w).sum(0))(torch.randn(3, 2))
print("jac", J.shape)
