"""Mathematical physics with torch.special: Gauss-Legendre nodes by Golub-Welsch (eigh of the
Jacobi matrix) checked with legendre_polynomial_p, a Chebyshev spectral fit with
chebyshev_polynomial_t, Hermite functions of the quantum oscillator, vibrating-drum
frequencies from zeros of bessel_j0/j1 found by bisection + Newton, modified Bessel /
scaled functions, Airy, zeta and log_ndtr/erfcx in a tail-probability computation, and the
gradients autograd gives for the differentiable ones."""

import math
import torch
from torch import special as S

torch.set_default_dtype(torch.float64)

# Golub-Welsch
n = 8
k = torch.arange(1, n, dtype=torch.float64)
beta = k / torch.sqrt(4 * k ** 2 - 1)
J = torch.diag(beta, 1) + torch.diag(beta, -1)
nodes, vecs = torch.linalg.eigh(J)
weights = 2 * vecs[0] ** 2
print("gauss nodes", nodes)
p8 = S.legendre_polynomial_p(nodes, n).abs().max().item()
print("weights sum", weights.sum().item(), "P_8 at nodes", p8 < 1e-12)
f = lambda x: torch.exp(x) * torch.cos(3 * x)
print("quadrature", (weights * f(nodes)).sum().item(), "exact",
      (math.exp(1) * (math.cos(3) + 3 * math.sin(3))
       - math.exp(-1) * (math.cos(3) - 3 * math.sin(3))) / 10)

# Chebyshev fit of a Runge function
m = 20
xc = torch.cos(math.pi * (torch.arange(m) + 0.5) / m)
runge = 1 / (1 + 25 * xc ** 2)
T = torch.stack([S.chebyshev_polynomial_t(xc, j) for j in range(m)], 1)
coef = torch.linalg.lstsq(T, runge.unsqueeze(1)).solution.squeeze(1)
xt = torch.linspace(-1, 1, 101)
approx = torch.stack([S.chebyshev_polynomial_t(xt, j) for j in range(m)], 1) @ coef
err = (approx - 1 / (1 + 25 * xt ** 2)).abs().max().item()
print("cheb coef decay", coef[::4].abs(), "max err", err)
x3 = torch.tensor(0.3)
print("U/V/W at 0.3", S.chebyshev_polynomial_u(x3, 5).item(),
      S.chebyshev_polynomial_v(x3, 5).item(), S.chebyshev_polynomial_w(x3, 5).item())

# Hermite functions: orthonormality by trapezoid
x = torch.linspace(-8, 8, 801)
psi = torch.stack([S.hermite_polynomial_h(x, j) * torch.exp(-x ** 2 / 2)
                   / math.sqrt(2 ** j * math.factorial(j) * math.sqrt(math.pi)) for j in range(5)])
gram = torch.trapezoid(psi[:, None] * psi[None], x, dim=-1)
print("hermite gram", (gram - torch.eye(5)).abs().max().item() < 1e-8,
      "He_3(1.5)", S.hermite_polynomial_he(torch.tensor(1.5), 3).item(),
      "L_4(2)", S.laguerre_polynomial_l(torch.tensor(2.0), 4).item())


# zeros of J0 and J1: bisection on sign changes, then Newton (J0' = -J1)
def bessel_zeros(fn, dfn, count):
    grid = torch.linspace(0.5, 20, 400)
    vals = fn(grid)
    idx = torch.nonzero(vals[:-1] * vals[1:] < 0).squeeze(1)[:count]
    z = 0.5 * (grid[idx] + grid[idx + 1])
    for _ in range(8):
        z = z - fn(z) / dfn(z)
    return z


j0z = bessel_zeros(S.bessel_j0, lambda z: -S.bessel_j1(z), 4)
j1z = bessel_zeros(S.bessel_j1, lambda z: S.bessel_j0(z) - S.bessel_j1(z) / z, 3)
print("j0 zeros", j0z, "drum frequency ratios", j0z / j0z[0])
two = torch.tensor(2.0)
print("j1 zeros", j1z, "Y0/Y1(2)", S.bessel_y0(two).item(), S.bessel_y1(two).item())

# modified Bessel functions: von Mises normalizer and its scaled forms
kap = torch.tensor([0.5, 2.0, 10.0, 50.0])
print("I0", S.i0(kap), "i0e*e^k", S.i0e(kap) * kap.exp())
print("I1/I0 (mean resultant length)", S.i1(kap) / S.i0(kap), S.i1e(kap) / S.i0e(kap))
print("K0, K1 scaled", S.scaled_modified_bessel_k0(kap), S.scaled_modified_bessel_k1(kap))
print("modified I0 vs i0", (S.modified_bessel_i0(kap) - S.i0(kap)).abs().max().item() < 1e-8)
print("spherical j0", S.spherical_bessel_j0(torch.tensor([0.0, 1.0, math.pi])))

# Airy, zeta, polygamma, gamma functions
xa = torch.tensor([-2.0, 0.0, 1.0])
print("airy", S.airy_ai(xa), "zeta(2)", S.zeta(torch.tensor(2.0), torch.tensor(1.0)).item(),
      math.pi ** 2 / 6)
one = torch.tensor(1.0)
print("digamma/polygamma", S.digamma(one).item(), S.polygamma(1, one).item())
print("multigammaln", S.multigammaln(torch.tensor(3.5), 3).item(), "gammaincc",
      S.gammaincc(torch.tensor(2.0), torch.tensor(1.5)).item())

# tail probabilities: log_ndtr and erfcx stay finite where ndtr underflows
zt = torch.tensor([-5.0, -20.0, -40.0])
print("ndtr", S.ndtr(zt), "log_ndtr", S.log_ndtr(zt))
print("mills ratio", torch.sqrt(torch.tensor(math.pi / 2)) * S.erfcx(-zt / math.sqrt(2)))
print("xlog1py/entr", S.xlog1py(torch.tensor([0.0, 2.0]), torch.tensor([-1.0, 0.5])),
      S.entr(torch.tensor([0.0, 0.5, -1.0])))

# gradients
v = torch.tensor([0.7, 1.9], requires_grad=True)
out = (S.i0e(v) + S.erfcx(v) + S.log_ndtr(-v) + S.xlogy(v, v) + S.ndtri(v / 3)
       + S.sinc(v) + S.logit(v / 2, eps=1e-6) + S.expit(v) + S.gammaln(v)).sum()
(g,) = torch.autograd.grad(out, v, create_graph=True)
(h,) = torch.autograd.grad(g.sum(), v)
print("grad", g.detach(), "second", h)
w = torch.tensor([1.3], requires_grad=True)
S.i1e(w).backward()
print("i1e grad", w.grad, "bessel_j0 requires_grad?", S.bessel_j0(w).requires_grad)
