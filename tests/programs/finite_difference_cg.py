"""Finite differences and Krylov solvers as in scientific-computing course notebooks: 1-D and
2-D Laplacians from torch.sparse.spdiags and sparse COO assembly, conjugate gradients with a
Jacobi preconditioner on torch.sparse.mm products, a Crank-Nicolson heat step through
lu_factor/lu_solve, power iteration for the spectral radius, torch.gradient and torch.diff
stencils, and the gradient of a source-inversion misfit through an unrolled CG solve."""

import math
import torch

torch.manual_seed(31)
torch.set_default_dtype(torch.float64)

n = 30
h = 1.0 / (n + 1)
ones = torch.ones(n)
L1 = torch.sparse.spdiags(torch.stack([-ones, 2 * ones, -ones]) / h ** 2,
                          torch.tensor([-1, 0, 1]), (n, n))
print("spdiags", L1.layout, L1._nnz(), L1.is_coalesced(), L1.coalesce().indices()[:, :4])
x = torch.linspace(h, 1 - h, n)
f = math.pi ** 2 * torch.sin(math.pi * x)
u = torch.linalg.solve(L1.to_dense(), f)
print("1d poisson", round((u - torch.sin(math.pi * x)).abs().max().item(), 8))


def cg(matvec, b, M_inv=None, tol=1e-10, maxiter=500):
    xk = torch.zeros_like(b)
    r = b - matvec(xk)
    z = r if M_inv is None else M_inv * r
    p = z.clone()
    rz = r @ z
    for k in range(maxiter):
        Ap = matvec(p)
        alpha = rz / (p @ Ap)
        xk = xk + alpha * p
        r = r - alpha * Ap
        if r.norm() < tol * b.norm():
            return xk, k + 1
        z = r if M_inv is None else M_inv * r
        rz_new = r @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    return xk, maxiter


# 2-D Laplacian on an m x m grid assembled as COO (5-point stencil), variable coefficient
m = 12
N = m * m
idx = torch.arange(N).view(m, m)
kappa = 1 + 0.5 * torch.rand(m, m)
rows, cols, vals = [idx.flatten()], [idx.flatten()], [4 * kappa.flatten()]
for di, dj in ((0, 1), (0, -1), (1, 0), (-1, 0)):
    a = idx[max(0, -di): m - max(0, di), max(0, -dj): m - max(0, dj)]
    b = idx[max(0, di): m - max(0, -di), max(0, dj): m - max(0, -dj)]
    k_face = 0.5 * (kappa.flatten()[a.flatten()] + kappa.flatten()[b.flatten()])
    rows.append(a.flatten())
    cols.append(b.flatten())
    vals.append(-k_face)
A = torch.sparse_coo_tensor(torch.stack([torch.cat(rows), torch.cat(cols)]), torch.cat(vals),
                            (N, N)).coalesce()
A = A + torch.sparse_coo_tensor(torch.stack([idx.flatten(), idx.flatten()]),
                                torch.full((N,), 0.1), (N, N))
A = A.coalesce()
Ad = A.to_dense()
print("2d operator", A._nnz(), torch.allclose(Ad, Ad.T), round(torch.linalg.eigvalsh(Ad)[0].item(),
                                                             6))
rhs = torch.randn(N)
sol_direct = torch.linalg.solve(Ad, rhs)
diag = Ad.diagonal()


def mv(v):
    return torch.sparse.mm(A, v.unsqueeze(1)).squeeze(1)


sol_cg, iters = cg(mv, rhs)
sol_pcg, iters_p = cg(mv, rhs, M_inv=1 / diag)
print("cg", iters, iters_p, (sol_cg - sol_direct).abs().max().item() < 1e-8,
      (sol_pcg - sol_direct).abs().max().item() < 1e-8)

# power iteration and Rayleigh quotient for the largest eigenvalue
v = torch.randn(N)
for _ in range(150):
    v = mv(v)
    v = v / v.norm()
lam = v @ mv(v)
print("power", round(lam.item(), 5), round(torch.linalg.eigvalsh(Ad)[-1].item(), 5))

# Crank-Nicolson for u_t = u_xx with the 1-D Laplacian, factored once
dt = 1e-3
Ld = L1.to_dense()
eye = torch.eye(n)
LU, piv = torch.linalg.lu_factor(eye + 0.5 * dt * Ld)
B = eye - 0.5 * dt * Ld
u = torch.sin(math.pi * x) + 0.3 * torch.sin(3 * math.pi * x)
for _ in range(50):
    u = torch.linalg.lu_solve(LU, piv, (B @ u).unsqueeze(1)).squeeze(1)
t_end = 50 * dt
exact = math.exp(-math.pi ** 2 * t_end) * torch.sin(math.pi * x) + 0.3 * math.exp(
    -9 * math.pi ** 2 * t_end) * torch.sin(3 * math.pi * x)
print("crank-nicolson", round((u - exact).abs().max().item(), 8), u[:3])

# stencils: torch.gradient and torch.diff against analytic derivatives
xs = torch.linspace(0, 2, 41)
ys = torch.exp(xs)
(g1,) = torch.gradient(ys, spacing=(xs,))
(g2,) = torch.gradient(ys, spacing=0.05, edge_order=2)
print("gradient", round((g1 - ys).abs().max().item(), 6), round((g2 - ys).abs().max().item(), 6))
grid2 = torch.outer(xs[:5], xs[:6]) ** 2
gy, gx = torch.gradient(grid2, spacing=[xs[:5], xs[:6]])
print("gradient 2d", gy[2], gx[:, 3])
print("diff", torch.diff(ys[:5]), torch.diff(ys[:6], n=2), torch.diff(xs[:3], prepend=xs[:1],
                                                                       append=xs[-1:]))

# recover a source term from noisy observations by differentiating through CG
true_src = torch.exp(-((x - 0.3) / 0.1) ** 2)
obs = torch.linalg.solve(Ld, true_src) + 1e-4 * torch.randn(n)
src = torch.full((n,), 0.1, requires_grad=True)
opt = torch.optim.Adam([src], lr=0.2)
for it in range(15):
    pred, _ = cg(lambda w: torch.sparse.mm(L1, w.unsqueeze(1)).squeeze(1), src, maxiter=30)
    loss = ((pred - obs) ** 2).sum() * 1e4 + 1e-4 * (torch.diff(src) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 5 == 0:
        print("inversion", it, round(loss.item(), 6), src.grad.norm().item() > 0)
print("recovered peak", src.detach().argmax().item(), true_src.argmax().item())
