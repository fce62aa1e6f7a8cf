"""Lennard-Jones molecular dynamics: forces from autograd (cdist, masked diagonal, periodic
minimum image), velocity Verlet, energy conservation, radial distribution by histogram."""

import torch

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
n, box = 16, 4.0
grid = torch.stack(torch.meshgrid(torch.arange(4.0), torch.arange(4.0), indexing="xy"), -1)
pos = (grid.reshape(-1, 2) + 0.5) * (box / 4) + 0.05 * torch.randn(n, 2)
vel = 0.3 * torch.randn(n, 2)
vel -= vel.mean(0, keepdim=True)  # no drift of the centre of mass
mask = ~torch.eye(n, dtype=torch.bool)


def energy(x, eps=1.0, sigma=0.9, rc=2.0):
    d = x.unsqueeze(0) - x.unsqueeze(1)
    d = d - box * torch.round(d / box)  # minimum image convention
    r2 = (d**2).sum(-1)
    r2 = torch.where(mask, r2, torch.ones_like(r2))  # the diagonal must not give inf
    inv6 = (sigma**2 / r2) ** 3
    e = 4 * eps * (inv6**2 - inv6)
    e = e.masked_fill(~mask | (r2 > rc**2), 0.0)
    return 0.5 * e.sum()


def forces(x):
    x = x.detach().requires_grad_(True)
    e = energy(x)
    (g,) = torch.autograd.grad(e, x)
    return -g, e.detach()


f, e0 = forces(pos)
print("U0", f"{e0.item():.8f}", "max|F|", f"{f.abs().max().item():.6f}")
print("net force", torch.allclose(f.sum(0), torch.zeros(2), atol=1e-9))
dt, energies = 0.002, []
for _ in range(150):
    vel = vel + 0.5 * dt * f
    pos = (pos + dt * vel) % box
    f, u = forces(pos)
    vel = vel + 0.5 * dt * f
    kin = 0.5 * (vel**2).sum()
    energies.append((u + kin).item())
E = torch.tensor(energies)
print("E first/last", f"{E[0].item():.6f}", f"{E[-1].item():.6f}")
print("drift", f"{(E.max() - E.min()).item():.3e}" if (E.max() - E.min()) > 1e-6 else "tiny")
print("T", round((vel**2).sum().item() / (2 * n - 2), 6))
d = torch.cdist(pos, pos)
pairs = d[torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)]
print("pairs", pairs.shape, round(pairs.min().item(), 6))
hist = torch.histc(pairs, bins=8, min=0.0, max=4.0)
print("g(r) counts", hist.long().tolist())
# second derivative: the Hessian-vector product along a random direction
x = pos.clone().requires_grad_(True)
v = torch.randn_like(x)
(g,) = torch.autograd.grad(energy(x), x, create_graph=True)
(hv,) = torch.autograd.grad((g * v).sum(), x)
print("Hv norm", f"{hv.norm().item():.6f}")
eps_ = 1e-6
fd = (
    torch.autograd.grad(energy(x + eps_ * v), x)[0]
    - torch.autograd.grad(energy(x - eps_ * v), x)[0]
) / (2 * eps_)
print("Hv vs fd", torch.allclose(hv, fd, rtol=1e-5, atol=1e-6))
nbr = (d < 1.2) & mask
print("neighbours", nbr.sum(1).tolist(), nbr.nonzero().shape)
