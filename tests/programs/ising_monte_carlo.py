"""Lattice Monte Carlo as in statistical-physics course notebooks: a 2-D Ising model with
checkerboard Metropolis updates (roll for neighbours, where for acceptance), magnetization and
energy across temperatures with binning error bars, generator state save/restore for
reproducible chains, a 3-state Potts model with heat-bath updates (categorical draws via cumsum
and searchsorted), autocorrelation times, and Swendsen-Wang bond clusters."""

import math
import torch

torch.manual_seed(21)
N = 16
gen = torch.Generator().manual_seed(123)
checker = (torch.arange(N).view(-1, 1) + torch.arange(N).view(1, -1)) % 2 == 0


def neighbours(s):
    return (torch.roll(s, 1, 0) + torch.roll(s, -1, 0) + torch.roll(s, 1, 1)
            + torch.roll(s, -1, 1))


def sweep(s, beta, g):
    for mask in (checker, ~checker):
        dE = 2 * s * neighbours(s)
        accept = torch.rand(s.shape, generator=g) < torch.exp(-beta * dE.to(torch.float32))
        s = torch.where(mask & accept, -s, s)
    return s


def energy(s):
    return -(s * torch.roll(s, 1, 0) + s * torch.roll(s, 1, 1)).sum().item() / s.numel()


s = (2 * torch.randint(0, 2, (N, N), generator=gen) - 1).to(torch.int8)
print("init", s.dtype, s.sum().item(), energy(s))
Tc = 2 / math.log(1 + math.sqrt(2))
for T in (1.5, Tc, 3.5):
    beta = 1.0 / T
    ms, es = [], []
    for it in range(120):
        s = sweep(s, beta, gen)
        if it >= 40:
            ms.append(s.float().mean().abs().item())
            es.append(energy(s))
    m = torch.tensor(ms)
    bins = m[: len(m) // 8 * 8].view(8, -1).mean(1)
    print(f"T={T:.3f}", round(m.mean().item(), 5), round(bins.std().item() / math.sqrt(8), 5),
          round(sum(es) / len(es), 5), round((m ** 2).mean().item() - m.mean().item() ** 2, 6))

# reproducible chains from a saved generator state
state = gen.get_state()
a = sweep(s, 0.4, gen)
gen.set_state(state)
b = sweep(s, 0.4, gen)
g2 = torch.Generator()
g2.set_state(state)
c = sweep(s, 0.4, g2)
print("replay", torch.equal(a, b), torch.equal(a, c), gen.initial_seed(), state.dtype,
      state.shape)

# 3-state Potts model, heat-bath updates with categorical draws
q = 3
p = torch.randint(0, q, (N, N), generator=gen)


def potts_sweep(p, beta, g):
    for mask in (checker, ~checker):
        onehot = torch.nn.functional.one_hot(p, q).float()
        nb = (torch.roll(onehot, 1, 0) + torch.roll(onehot, -1, 0) + torch.roll(onehot, 1, 1)
              + torch.roll(onehot, -1, 1))
        prob = torch.softmax(beta * nb, dim=-1)
        cdf = prob.cumsum(-1)
        u = torch.rand(N, N, 1, generator=g)
        new = torch.searchsorted(cdf, u).squeeze(-1).clamp_max(q - 1)
        p = torch.where(mask, new, p)
    return p


hist = torch.zeros(q)
for _ in range(60):
    p = potts_sweep(p, 1.2, gen)
    hist += torch.bincount(p.flatten(), minlength=q)
order = (hist.max() / hist.sum() * q - 1) / (q - 1)
print("potts", hist.long(), round(order.item(), 5), torch.unique(p, return_counts=True))
same = (p == torch.roll(p, 1, 0)).float().mean() + (p == torch.roll(p, 1, 1)).float().mean()
print("potts bonds", round(same.item() / 2, 5))

# integrated autocorrelation time of the magnetization at Tc
series = []
for _ in range(200):
    s = sweep(s, 1 / Tc, gen)
    series.append(s.float().mean())
x = torch.stack(series)
x = x - x.mean()
acf = torch.stack([(x[: len(x) - k] * x[k:]).mean() for k in range(30)]) / x.var(
    unbiased=False)
cut = int(torch.nonzero(acf < 0.05)[0]) if (acf < 0.05).any() else 30
tau = 0.5 + acf[1:cut].sum()
print("autocorr", acf[:4], cut, round(tau.item(), 5))

# bond percolation clusters (Swendsen-Wang bonds) labelled by iterative min-propagation
pb = 1 - math.exp(-2 / Tc)
right = (s == torch.roll(s, -1, 1)) & (torch.rand(N, N, generator=gen) < pb)
down = (s == torch.roll(s, -1, 0)) & (torch.rand(N, N, generator=gen) < pb)
label = torch.arange(N * N).view(N, N)
for _ in range(200):
    new = label
    new = torch.where(right, torch.minimum(new, torch.roll(label, -1, 1)), new)
    new = torch.where(torch.roll(right, 1, 1), torch.minimum(new, torch.roll(label, 1, 1)), new)
    new = torch.where(down, torch.minimum(new, torch.roll(label, -1, 0)), new)
    new = torch.where(torch.roll(down, 1, 0), torch.minimum(new, torch.roll(label, 1, 0)), new)
    if torch.equal(new, label):
        break
    label = new
sizes = torch.unique(label, return_counts=True)[1].sort(descending=True).values
print("clusters", sizes.numel(), sizes[:5], right.sum().item(), down.sum().item())
