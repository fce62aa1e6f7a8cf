"""Numerical integration and polynomial fitting as in numerical-methods course notebooks:
trapezoid and cumulative_trapezoid with uniform and non-uniform samples, Simpson's rule by
slicing, Gauss-Legendre nodes from the Golub-Welsch eigenproblem, Romberg extrapolation,
polynomial least squares with vander/lstsq/pinv and the condition number, Chebyshev fits,
Monte Carlo integration with error bars, and gradients of an integral w.r.t. parameters."""

import math
import torch

torch.manual_seed(13)
torch.set_default_dtype(torch.float64)

x = torch.linspace(0, math.pi, 101)
y = torch.sin(x)
print("trapezoid", torch.trapezoid(y, x), torch.trapezoid(y, dx=x[1] - x[0]),
      torch.trapz(y, x))
ct = torch.cumulative_trapezoid(y, x)
print("cumulative", ct.shape, ct[[24, 49, 99]], (ct - (1 - torch.cos(x[1:]))).abs().max() < 1e-3)
xs = torch.sort(torch.rand(60) * 2).values
print("non-uniform", torch.trapezoid(xs ** 2, xs), (xs[-1] ** 3 - xs[0] ** 3) / 3)
Y = torch.stack([torch.sin(x), torch.cos(x), x ** 2])
cy = torch.cumulative_trapezoid(Y, dx=0.5, dim=0)
print("batched", torch.trapezoid(Y, x, dim=1).round(decimals=8) + 0.0, cy.shape,
      cy[:, ::25].round(decimals=8) + 0.0)


def simpson(f, a, b, n=100):
    t = torch.linspace(a, b, n + 1)
    v = f(t)
    h = (b - a) / n
    return h / 3 * (v[0] + v[-1] + 4 * v[1:-1:2].sum() + 2 * v[2:-1:2].sum())


print("simpson", simpson(torch.exp, 0.0, 1.0) - (math.e - 1), simpson(lambda t: t ** 4, -1, 1))


def romberg(f, a, b, levels=6):
    R = torch.zeros(levels, levels)
    h = b - a
    R[0, 0] = 0.5 * h * (f(torch.tensor(a)) + f(torch.tensor(b)))
    for i in range(1, levels):
        h = h / 2
        mids = a + h * torch.arange(1, 2 ** i, 2)
        R[i, 0] = 0.5 * R[i - 1, 0] + h * f(mids).sum()
        for j in range(1, i + 1):
            R[i, j] = R[i, j - 1] + (R[i, j - 1] - R[i - 1, j - 1]) / (4 ** j - 1)
    return R


R = romberg(lambda t: 1 / (1 + t ** 2), 0.0, 1.0)
print("romberg", R[-1, -1] * 4 - math.pi, R.diagonal()[:3])

# Gauss-Legendre by Golub-Welsch: eigenvalues of the Jacobi matrix
n = 8
k = torch.arange(1, n)
beta = k / torch.sqrt(4 * k ** 2 - 1.0)
J = torch.diag(beta, 1) + torch.diag(beta, -1)
nodes, vecs = torch.linalg.eigh(J)
weights = 2 * vecs[0] ** 2
print("gauss nodes", nodes[:3], weights[:3], weights.sum())
print("gauss exact deg 15", ((weights * nodes ** 14).sum() - 2 / 15).abs() < 1e-13,
      ((weights * torch.exp(nodes)).sum() - (math.e - 1 / math.e)).abs() < 1e-13)

# polynomial least squares
t = torch.linspace(-1, 1, 40)
obs = 1 - 2 * t + 0.5 * t ** 3 + 0.05 * torch.randn(40)
V = torch.vander(t, N=5, increasing=True)
coef = torch.linalg.lstsq(V, obs.unsqueeze(1)).solution.squeeze(1)
coef_p = torch.linalg.pinv(V) @ obs
coef_n = torch.linalg.solve(V.T @ V, V.T @ obs)
print("polyfit", coef, torch.allclose(coef, coef_p), torch.allclose(coef, coef_n))
print("vander", torch.vander(torch.tensor([1.0, 2.0, 3.0])), torch.linalg.cond(V),
      torch.linalg.matrix_rank(V))
res = torch.linalg.lstsq(V, obs.unsqueeze(1), driver="gelsd")
print("gelsd", res.rank, res.singular_values, res.residuals)
for deg in (1, 3, 9):
    Vd = torch.vander(t, N=deg + 1)
    c = torch.linalg.lstsq(Vd, obs.unsqueeze(1)).solution
    rss = (Vd @ c - obs.unsqueeze(1)).pow(2).sum()
    print("degree", deg, round(rss.item(), 6), round(40 * math.log(rss.item() / 40)
                                                    + 2 * (deg + 1), 4))


# Chebyshev least squares fit of |x| and its coefficient decay
def cheb_basis(z, m):
    T = [torch.ones_like(z), z]
    for _ in range(2, m):
        T.append(2 * z * T[-1] - T[-2])
    return torch.stack(T[:m], 1)


zz = torch.cos(math.pi * (torch.arange(64) + 0.5) / 64)
C = torch.linalg.lstsq(cheb_basis(zz, 12), zz.abs().unsqueeze(1)).solution.squeeze(1)
print("chebyshev", C[::2][:4], C[1::2].abs().max() < 1e-12)

# Monte Carlo with error bar and importance sampling
u = torch.rand(20000)
fvals = torch.exp(-u ** 2)
print("mc", fvals.mean(), fvals.std() / math.sqrt(20000))
q = torch.distributions.Exponential(torch.tensor(1.0))
s = q.sample((20000,))
w = torch.exp(-s ** 2 / 2) / q.log_prob(s).exp() * (s > 0)
print("importance", w.mean(), math.sqrt(math.pi / 2))

# gradient of a parametric integral (Leibniz rule) vs closed form
a = torch.tensor(1.3, requires_grad=True)
grid = torch.linspace(0, 1, 2001)
integral = torch.trapezoid(torch.exp(-a * grid ** 2), grid)
integral.backward()
exact = -torch.trapezoid(grid ** 2 * torch.exp(-1.3 * grid ** 2), grid)
print("leibniz", integral.item(), a.grad.item(), exact.item())
b = torch.tensor([0.5, 2.0], requires_grad=True)
area = torch.cumulative_trapezoid(torch.sin(b[0] * grid) * b[1], grid)[-1]
(gb,) = torch.autograd.grad(area, b)
print("cumulative grad", gb)
