"""Sequential Monte Carlo as in state-space-model lecture notes: a bootstrap particle filter
for a stochastic-volatility model with multinomial, systematic and stratified resampling
(torch.multinomial with a Generator, cumsum + searchsorted, gather), the log-likelihood
estimate, effective sample size, ancestor tracing, and particle MCMC over one parameter."""

import math
import torch

torch.manual_seed(7)
torch.set_default_dtype(torch.float64)

# simulate x_t = phi x_{t-1} + sigma v_t,  y_t = beta exp(x_t / 2) e_t
T, phi, sigma, beta = 40, 0.9, 0.4, 0.7
x = torch.zeros(T)
x[0] = sigma / math.sqrt(1 - phi ** 2) * torch.randn(())
for t in range(1, T):
    x[t] = phi * x[t - 1] + sigma * torch.randn(())
y = beta * torch.exp(x / 2) * torch.randn(T)
print("data", y[:5], round(x.std().item(), 6))


def systematic(w, gen):
    n = w.shape[-1]
    u = (torch.rand((), generator=gen) + torch.arange(n)) / n
    c = torch.cumsum(w, -1)
    c[-1] = 1.0
    return torch.searchsorted(c, u)


def stratified(w, gen):
    n = w.shape[-1]
    u = (torch.rand(n, generator=gen) + torch.arange(n)) / n
    return torch.searchsorted(torch.cumsum(w, -1), u).clamp_max(n - 1)


def multinomial(w, gen):
    return torch.multinomial(w, w.shape[-1], replacement=True, generator=gen)


def pf(y, phi, n=200, resample=systematic, seed=0):
    gen = torch.Generator().manual_seed(seed)
    p = sigma / math.sqrt(1 - phi ** 2) * torch.randn(n, generator=gen)
    loglik = torch.tensor(0.0)
    ancestry = torch.arange(n)
    ess = []
    means = []
    for t in range(len(y)):
        if t > 0:
            p = phi * p + sigma * torch.randn(n, generator=gen)
        var = beta ** 2 * torch.exp(p)
        logw = -0.5 * (math.log(2 * math.pi) + var.log() + y[t] ** 2 / var)
        m = logw.max()
        w = torch.exp(logw - m)
        loglik = loglik + m + torch.log(w.mean())
        w = w / w.sum()
        ess.append(1.0 / (w ** 2).sum())
        means.append((w * p).sum())
        idx = resample(w, gen)
        p = p.gather(0, idx)
        ancestry = ancestry[idx]
    return loglik, torch.stack(means), torch.stack(ess), ancestry


for name, rs in (("systematic", systematic), ("stratified", stratified), ("multinomial",
                                                                         multinomial)):
    ll, means, ess, anc = pf(y, phi, resample=rs)
    print(name, round(ll.item(), 6), round(ess.min().item(), 4),
          torch.unique(anc).numel(), round((means - x).pow(2).mean().item(), 6))

# batched multinomial over rows and the generator's state round trip
g = torch.Generator().manual_seed(3)
W = torch.softmax(torch.randn(3, 6), 1)
state = g.get_state()
a = torch.multinomial(W, 4, replacement=True, generator=g)
g.set_state(state)
b = torch.multinomial(W, 4, replacement=True, generator=g)
print("batched", a, torch.equal(a, b), torch.multinomial(W[0], 3, generator=g))
counts = torch.bincount(torch.multinomial(W[0], 1000, replacement=True, generator=g),
                        minlength=6)
print("counts", counts, W[0])

# particle marginal Metropolis-Hastings over phi
gen = torch.Generator().manual_seed(11)
cur = 0.5
cur_ll = pf(y, cur, n=100, seed=1)[0]
chain = []
accepted = 0
for it in range(25):
    prop = cur + 0.1 * torch.randn((), generator=gen).item()
    if abs(prop) < 1:
        prop_ll = pf(y, prop, n=100, seed=it + 2)[0]
        if torch.log(torch.rand((), generator=gen)) < prop_ll - cur_ll:
            cur, cur_ll = prop, prop_ll
            accepted += 1
    chain.append(cur)
print("pmmh", accepted, round(sum(chain) / len(chain), 6), round(cur_ll.item(), 6))
