"""Inverse problems with differentiable simulators: recover a spring-mass chain's stiffnesses
from an observed trajectory (unrolled symplectic Euler, gradients through 80 steps), a 1-D
wave equation's source by backprop through a leapfrog finite-difference solver, FFT-based
convolution (rfft/irfft) checked against conv1d, and Tikhonov / Wiener deconvolution of a
blurred signal with linalg.solve and in the Fourier domain, with the regularization weight
chosen by generalized cross-validation."""

import math
import torch
import torch.nn.functional as F

torch.manual_seed(31)
torch.set_default_dtype(torch.float64)


# ------------------------------------------------------------------ spring-mass chain
def simulate(k, x0, v0, dt=0.03, steps=80, damping=0.05):
    x, v = x0, v0
    xs = []
    for _ in range(steps):
        ext = torch.diff(x, prepend=torch.zeros(1))           # spring extensions (wall at 0)
        tension = k * ext
        force = tension - torch.cat([tension[1:], torch.zeros(1)]) * 1.0
        v = v - dt * (force + damping * v)
        x = x + dt * v
        xs.append(x)
    return torch.stack(xs)


k_true = torch.tensor([4.0, 2.5, 6.0, 3.0])
x0 = torch.tensor([1.2, 2.1, 2.9, 4.3])
v0 = torch.zeros(4)
obs = simulate(k_true, x0, v0)
obs = obs + 0.01 * torch.randn_like(obs)
log_k = torch.zeros(4, requires_grad=True)
opt = torch.optim.Adam([log_k], lr=0.1)
for it in range(30):
    pred = simulate(log_k.exp(), x0, v0)
    loss = F.mse_loss(pred, obs)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 10 == 0 or it == 29:
        print(f"springs {it} loss {loss.item():.8f} k {log_k.exp().detach().tolist()}")


# ------------------------------------------------------------------ 1-D wave source inversion
nx, nt, c, dx, dt = 48, 70, 1.0, 1.0 / 47, 0.015
xg = torch.linspace(0, 1, nx)
lap = (torch.diag(torch.full((nx - 1,), 1.0), -1) - 2 * torch.eye(nx)
       + torch.diag(torch.full((nx - 1,), 1.0), 1)) / dx ** 2


def ricker(t, f0=8.0, t0=0.1):
    a = (math.pi * f0 * (t - t0)) ** 2
    return (1 - 2 * a) * math.exp(-a)


def wave(src_amp, src_pos):
    u_prev = torch.zeros(nx)
    u = torch.zeros(nx)
    spatial = torch.exp(-((xg - src_pos) / 0.05) ** 2)
    rec = []
    for n in range(nt):
        f = src_amp * ricker(n * dt) * spatial
        u_next = 2 * u - u_prev + (c * dt) ** 2 * (lap @ u + f)
        u_next = u_next.clone()
        u_next[0] = 0.0
        u_next[-1] = 0.0
        u_prev, u = u, u_next
        rec.append(u[[8, 24, 40]])
    return torch.stack(rec)


data = wave(torch.tensor(2.0), torch.tensor(0.62))
amp = torch.tensor(1.0, requires_grad=True)
pos = torch.tensor(0.5, requires_grad=True)
opt = torch.optim.Adam([amp, pos], lr=0.02)
for it in range(12):
    loss = (wave(amp, pos) - data).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 4 == 0 or it == 11:
        print(f"wave {it} misfit {loss.item():.8e} amp {amp.item():.5f} pos {pos.item():.5f}")

# ------------------------------------------------------------------ FFT convolution
sig = torch.randn(2, 100)
kern = torch.randn(9)


def fft_conv(x, h):
    n = x.shape[-1] + h.shape[-1] - 1
    nfft = 1 << (n - 1).bit_length()
    y = torch.fft.irfft(torch.fft.rfft(x, n=nfft) * torch.fft.rfft(h, n=nfft), n=nfft)
    return y[..., :n]


full = fft_conv(sig, kern)
direct = F.conv1d(sig[:, None], kern.flip(0)[None, None], padding=8)[:, 0]
print("fft conv", full.shape, (full - direct).abs().max().item() < 1e-10)

# ------------------------------------------------------------------ deconvolution
n = 80
t = torch.linspace(0, 1, n)
truth = (t > 0.2).double() - (t > 0.5).double() + torch.exp(-((t - 0.75) / 0.04) ** 2)
g = torch.exp(-0.5 * (torch.arange(-6, 7.0) / 2.0) ** 2)
g = g / g.sum()
A = torch.zeros(n, n)
for i in range(n):
    for j, off in enumerate(range(-6, 7)):
        if 0 <= i + off < n:
            A[i, i + off] = g[j]
blurred = A @ truth + 0.01 * torch.randn(n)
D2 = torch.diff(torch.eye(n), n=2, dim=0)


def tikhonov(lam):
    return torch.linalg.solve(A.T @ A + lam * D2.T @ D2, A.T @ blurred)


def gcv(lam):
    H = A @ torch.linalg.solve(A.T @ A + lam * D2.T @ D2, A.T)
    r = blurred - H @ blurred
    return n * (r @ r) / (n - torch.trace(H)) ** 2


lams = torch.logspace(-5, 0, 11)
scores = torch.stack([gcv(lam) for lam in lams])
best = lams[scores.argmin()]
x_hat = tikhonov(best)
print("gcv best lambda", best.item(), "rel err", ((x_hat - truth).norm() / truth.norm()).item())

# the optimal lambda refined by gradient descent on log(GCV)
log_lam = best.log().clone().requires_grad_()
opt = torch.optim.Adam([log_lam], lr=0.2)
for _ in range(15):
    s = gcv(log_lam.exp()).log()
    opt.zero_grad()
    s.backward()
    opt.step()
print("refined lambda", log_lam.exp().item(), "gcv", gcv(log_lam.exp()).item())

# Wiener deconvolution on a periodic grid
Hf = torch.fft.rfft(torch.roll(F.pad(g, (0, n - 13)), -6))
Yf = torch.fft.rfft(blurred)
wiener = torch.fft.irfft(Yf * Hf.conj() / (Hf.abs() ** 2 + 1e-2), n=n)
print("wiener rel err", ((wiener - truth).norm() / truth.norm()).item())
