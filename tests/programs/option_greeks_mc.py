"""Quantitative finance in PyTorch: Black-Scholes prices and Greeks by autograd (delta, gamma,
vega, vanna by create_graph), implied volatility by Newton's method, a Monte Carlo price with
antithetic and Sobol quasi-random normals (SobolEngine, special.ndtri), pathwise Greeks through
simulated GBM paths, an Asian option with a control variate, and a Heston-style path simulation
with full truncation, all in float64."""

import math
import torch
from torch.distributions import Normal
from torch.quasirandom import SobolEngine

torch.manual_seed(2024)
torch.set_default_dtype(torch.float64)
N01 = Normal(0.0, 1.0)


def bs_call(S, K, T, r, sigma):
    d1 = (torch.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * torch.sqrt(T))
    d2 = d1 - sigma * torch.sqrt(T)
    return S * N01.cdf(d1) - K * torch.exp(-r * T) * torch.special.ndtr(d2)


S = torch.tensor([90.0, 100.0, 110.0], requires_grad=True)
sigma = torch.tensor(0.2, requires_grad=True)
K, T, r = torch.tensor(100.0), torch.tensor(1.0), torch.tensor(0.03)
price = bs_call(S, K, T, r, sigma)
delta, vega = torch.autograd.grad(price.sum(), (S, sigma), create_graph=True)
gamma = torch.autograd.grad(delta.sum(), S, retain_graph=True)[0]
vanna = torch.autograd.grad(delta.sum(), sigma)[0]
print("price", price.detach())
print("delta", delta.detach(), "gamma", gamma)
print("vega", vega.item(), "vanna", vanna.item())
d1 = (torch.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * torch.sqrt(T))
print("closed-form delta", torch.special.ndtr(d1).detach())


def implied_vol(target, S, K, T, r, guess=0.5, iters=20):
    vol = torch.tensor(guess, requires_grad=True)
    for _ in range(iters):
        f = bs_call(S, K, T, r, vol) - target
        (g,) = torch.autograd.grad(f, vol)
        with torch.no_grad():
            vol -= f / g
        if f.abs() < 1e-12:
            break
    return vol.detach()


iv = implied_vol(torch.tensor(12.0), torch.tensor(100.0), K, T, r)
print("implied vol", iv.item(), bs_call(torch.tensor(100.0), K, T, r, iv).item())

# Monte Carlo with antithetic variates
n = 4096
z = torch.randn(n // 2)
z = torch.cat([z, -z])
S0 = torch.tensor(100.0, requires_grad=True)
vol = torch.tensor(0.2, requires_grad=True)
ST = S0 * torch.exp((r - 0.5 * vol ** 2) * T + vol * torch.sqrt(T) * z)
payoff = torch.exp(-r * T) * torch.clamp(ST - K, min=0)
mc = payoff.mean()
mc.backward()
print("mc price", mc.item(), "se", (payoff.std() / math.sqrt(n)).item())
print("pathwise delta", S0.grad.item(), "vega", vol.grad.item())

# quasi-Monte Carlo
sobol = SobolEngine(dimension=1, scramble=True, seed=7)
u = sobol.draw(1024).squeeze(1).clamp(1e-12, 1 - 1e-12)
zq = torch.special.ndtri(u)
STq = 100.0 * torch.exp((r - 0.02) * T + 0.2 * zq)
print("qmc price", (torch.exp(-r * T) * torch.clamp(STq - K, min=0)).mean().item(),
      "exact", bs_call(torch.tensor(100.0), K, T, r, torch.tensor(0.2)).item())

# Asian option: arithmetic average, geometric average as control variate
steps, paths = 12, 2000
dt = T / steps
Z = torch.randn(paths, steps)
logS = math.log(100.0) + torch.cumsum((r - 0.02) * dt + 0.2 * torch.sqrt(dt) * Z, dim=1)
Sp = logS.exp()
arith = torch.exp(-r * T) * torch.clamp(Sp.mean(1) - K, min=0)
geo = torch.exp(-r * T) * torch.clamp(torch.exp(logS.mean(1)) - K, min=0)
sig_g = 0.2 * math.sqrt((steps + 1) * (2 * steps + 1) / (6 * steps ** 2))
mu_g = (r.item() - 0.02) * (steps + 1) / (2 * steps) + 0.5 * sig_g ** 2
geo_exact = bs_call(torch.tensor(100.0) * math.exp((mu_g - r.item()) * T.item()), K, T, r,
                    torch.tensor(sig_g))
cov = torch.cov(torch.stack([arith, geo]))
beta = cov[0, 1] / cov[1, 1]
cv = arith - beta * (geo - geo_exact)
print("asian", arith.mean().item(), "cv", cv.mean().item(), "var ratio",
      (cv.var() / arith.var()).item() < 0.1)

# Heston with full truncation Euler
kappa, theta_h, xi, rho, v0 = 2.0, 0.04, 0.3, -0.7, 0.04
paths, steps = 2000, 50
dt = 1.0 / steps
s = torch.full((paths,), math.log(100.0))
v = torch.full((paths,), v0)
for _ in range(steps):
    z1 = torch.randn(paths)
    z2 = rho * z1 + math.sqrt(1 - rho ** 2) * torch.randn(paths)
    vp = v.clamp(min=0)
    s = s + (0.03 - 0.5 * vp) * dt + torch.sqrt(vp * dt) * z1
    v = v + kappa * (theta_h - vp) * dt + xi * torch.sqrt(vp * dt) * z2
heston = math.exp(-0.03) * torch.clamp(s.exp() - 100.0, min=0).mean()
print("heston call", heston.item(), "neg var frac", (v < 0).double().mean().item())
print("terminal quantiles", torch.quantile(s.exp(), torch.tensor([0.05, 0.5, 0.95])))
