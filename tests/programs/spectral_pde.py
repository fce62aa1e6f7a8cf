"""Pseudo-spectral methods as in numerical-PDE course notebooks: spectral derivatives with
rfft/irfft and fftfreq wavenumbers, a Burgers equation step with 2/3 dealiasing and an RK4
integrator, the 2-D Poisson equation solved in Fourier space (fft2/ifft2), FFT convolution
against direct convolution, a Chebyshev differentiation matrix, spectral energy spectra, and
the gradient of a final-state misfit with respect to the initial condition."""

import math
import torch

torch.manual_seed(5)
torch.set_default_dtype(torch.float64)

N, Lx = 64, 2 * math.pi
x = torch.arange(N) * (Lx / N)
k = torch.fft.rfftfreq(N, d=Lx / N) * 2 * math.pi
kf = torch.fft.fftfreq(N, d=Lx / N) * 2 * math.pi
print("wavenumbers", k[:4], kf[N // 2 - 1: N // 2 + 2], k.dtype)
u = torch.exp(torch.sin(x))
du = torch.fft.irfft(1j * k * torch.fft.rfft(u), n=N)
d2u = torch.fft.irfft(-(k ** 2) * torch.fft.rfft(u), n=N)
print("d/dx error", (du - torch.cos(x) * u).abs().max().item() < 1e-10,
      (d2u - (torch.cos(x) ** 2 - torch.sin(x)) * u).abs().max().item() < 1e-9)
duc = torch.fft.ifft(1j * kf * torch.fft.fft(u.to(torch.complex128)))
print("complex path", duc.real[:3], duc.imag.abs().max() < 1e-12)

# viscous Burgers u_t + u u_x = nu u_xx with 2/3-rule dealiasing and RK4
nu = 0.05
mask = (k < (2 / 3) * k.max()).to(torch.complex128)


def rhs(uh):
    uh = uh * mask
    ux = torch.fft.irfft(1j * k * uh, n=N)
    uu = torch.fft.irfft(uh, n=N)
    return -torch.fft.rfft(uu * ux) - nu * k ** 2 * uh


def simulate(u0, steps=100, dt=0.01):
    uh = torch.fft.rfft(u0)
    for _ in range(steps):
        k1 = rhs(uh)
        k2 = rhs(uh + 0.5 * dt * k1)
        k3 = rhs(uh + 0.5 * dt * k2)
        k4 = rhs(uh + dt * k3)
        uh = uh + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return torch.fft.irfft(uh, n=N)


u0 = torch.sin(x) + 0.5
uT = simulate(u0)
print("burgers", uT[::16], round(uT.mean().item(), 10), round(u0.mean().item(), 10))
energy = torch.fft.rfft(uT).abs() ** 2 / N
print("spectrum", energy[:5], energy[1:].argmax().item() + 1)

# gradient of a misfit w.r.t. the initial condition, checked with a directional difference
target = uT.detach() + 0.01 * torch.randn(N)
a = (torch.sin(x) + 0.4).requires_grad_(True)
loss = (simulate(a, steps=40) - target).pow(2).mean()
(g,) = torch.autograd.grad(loss, a)
v = torch.randn(N)
h = 1e-6
with torch.no_grad():
    fd = ((simulate(a + h * v, 40) - target).pow(2).mean()
          - (simulate(a - h * v, 40) - target).pow(2).mean()) / (2 * h)
print("adjoint", round(loss.item(), 8), round((g @ v).item(), 6), round(fd.item(), 6))

# 2-D Poisson: -lap(phi) = f on a periodic square
M = 32
xs = torch.arange(M) * (2 * math.pi / M)
X, Y = torch.meshgrid(xs, xs, indexing="ij")
phi_true = torch.sin(2 * X) * torch.cos(3 * Y)
f = 13 * phi_true
kx = torch.fft.fftfreq(M, 1 / M)
KX, KY = torch.meshgrid(kx, kx, indexing="ij")
K2 = KX ** 2 + KY ** 2
K2[0, 0] = 1.0
phi_hat = torch.fft.fft2(f) / K2
phi_hat[0, 0] = 0
phi = torch.fft.ifft2(phi_hat).real
print("poisson", (phi - phi_true).abs().max().item() < 1e-12, phi.shape)
fr = torch.fft.rfft2(f)
print("rfft2", fr.shape, round(fr.abs().max().item(), 6), (fr.abs() > 1).sum().item(),
      torch.fft.irfft2(fr, s=(M, M))[1, :3])

# FFT convolution vs direct (F.conv1d) and a Gaussian smoothing kernel
sig = torch.randn(50)
ker = torch.exp(-0.5 * torch.linspace(-3, 3, 9) ** 2)
ker = ker / ker.sum()
L = 50 + 9 - 1
fftconv = torch.fft.irfft(torch.fft.rfft(sig, n=L) * torch.fft.rfft(ker, n=L), n=L)
direct = torch.nn.functional.conv1d(sig.view(1, 1, -1), ker.flip(0).view(1, 1, -1),
                                    padding=8).view(-1)
print("fftconv", torch.allclose(fftconv, direct), fftconv[4:8])

# Chebyshev differentiation matrix (Trefethen, Spectral Methods in MATLAB, cheb.m)
n = 12
j = torch.arange(n + 1)
xc = torch.cos(math.pi * j / n)
c = torch.ones(n + 1)
c[0] = c[-1] = 2
c = c * (-1.0) ** j
dX = xc[:, None] - xc[None, :]
D = (c[:, None] / c[None, :]) / (dX + torch.eye(n + 1))
D = D - torch.diag(D.sum(1))
fc = torch.exp(xc) * torch.sin(5 * xc)
dfc = torch.exp(xc) * (torch.sin(5 * xc) + 5 * torch.cos(5 * xc))
print("cheb", D.shape, round((D @ fc - dfc).abs().max().item(), 6), D[0, :3])
ev = torch.linalg.eigvals(D[1:-1, 1:-1] @ D[1:-1, 1:-1])
print("cheb eig", ev.real.sort().values[:3], ev.numel())
