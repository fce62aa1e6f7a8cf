"""Batched linear algebra with gradients, as in scientific code: SVD low-rank fits, eigh of
covariances, QR orthogonalisation, Cholesky solves, lstsq, matrix_exp of generators, det /
slogdet / logdet of SPD batches, pinv, matrix functions via eigendecomposition, norms, gradcheck."""

import torch
from torch.autograd import gradcheck

torch.manual_seed(21)
torch.set_default_dtype(torch.float64)
B = torch.randn(3, 5, 4, requires_grad=True)
U, S, Vh = torch.linalg.svd(B, full_matrices=False)
print("svd", U.shape, S, torch.dist(U @ torch.diag_embed(S) @ Vh, B).item() < 1e-12)
(S[:, 0].sum() + S[:, -1].log().sum()).backward(retain_graph=True)
print("dS", B.grad[0])
print(
    "svdvals",
    torch.linalg.svdvals(B[1].detach()),
    torch.linalg.matrix_rank(B[0].detach() @ torch.ones(4, 4)),
)
B.grad = None
lowrank = U[..., :2] @ torch.diag_embed(S[..., :2]) @ Vh[..., :2, :]
(lowrank**2).sum().backward()
print("rank2", B.grad.norm(dim=(1, 2)))

C = torch.randn(4, 6)
cov = (C @ C.T / 6 + 0.1 * torch.eye(4)).requires_grad_(True)
w, V = torch.linalg.eigh(cov)
sqrtm = V @ torch.diag(w.sqrt()) @ V.T
print("eigh", w, torch.allclose(sqrtm @ sqrtm, cov))
sqrtm.trace().backward()
print("d tr sqrt", cov.grad.diagonal())
ev = torch.linalg.eigvalsh(cov.detach(), UPLO="U")
print("eigvalsh", ev, torch.linalg.eigvals(cov.detach()).real.sort().values)

A = torch.randn(2, 4, 3, requires_grad=True)
Q, R = torch.linalg.qr(A)
print(
    "qr",
    Q.shape,
    R.diagonal(dim1=-2, dim2=-1),
    torch.linalg.qr(A.detach(), mode="complete").Q.shape,
)
(Q.sum() + R.triu(1).pow(2).sum()).backward()
print("dqr", A.grad[1, 0])
print("r-mode", torch.linalg.qr(A.detach(), mode="r").Q.shape)

K = torch.randn(3, 4, 4)
K = K @ K.mT + 4 * torch.eye(4)
K.requires_grad_(True)
L = torch.linalg.cholesky(K)
rhs = torch.randn(3, 4, 2)
X = torch.cholesky_solve(rhs, L)
print(
    "chol",
    torch.allclose(K @ X, rhs),
    torch.linalg.cholesky(K.detach(), upper=True).triu().equal(L.detach().mT),
)
sign, logabs = torch.linalg.slogdet(K)
print("slogdet", sign, logabs, torch.logdet(K), torch.det(K).log())
(X.sum() + 2 * L.diagonal(dim1=-2, dim2=-1).log().sum() - logabs.sum()).backward()
print("dK", K.grad[0, 0])
x2 = torch.linalg.solve_triangular(L.detach(), rhs, upper=False)
print(
    "tri",
    torch.allclose(L.detach() @ x2, rhs),
    torch.linalg.solve(K.detach(), rhs, left=True).shape,
)
Lf, info = torch.linalg.cholesky_ex(-K.detach())
print("cholesky_ex info", info)
try:
    torch.linalg.cholesky(-K.detach())
except Exception as e:
    print(type(e).__name__, str(e).split(".")[0])

Araw = torch.randn(20, 3)
yv = Araw @ torch.tensor([1.0, 2.0, -1.0]) + 0.05 * torch.randn(20)
res = torch.linalg.lstsq(Araw, yv.unsqueeze(-1))
print("lstsq", res.solution.squeeze(), res.rank, res.residuals.shape)
print("pinv", torch.allclose(torch.linalg.pinv(Araw) @ yv, res.solution.squeeze()))
Ag = torch.randn(3, 3, requires_grad=True)
torch.linalg.pinv(Ag).sum().backward()
print("dpinv", Ag.grad.sum().item() != 0)

G = torch.tensor([[0.0, -1.0, 0.3], [1.0, 0.0, -0.2], [-0.3, 0.2, 0.0]], requires_grad=True)
Rot = torch.linalg.matrix_exp(G)
print("expm", torch.allclose(Rot @ Rot.T, torch.eye(3)), torch.det(Rot))
Rot[0, 1].backward()
print("dexpm", G.grad)
P = torch.randn(4, 4)
print(
    "power",
    torch.linalg.matrix_power(P, 3).sum(),
    torch.linalg.matrix_power(P, -1).allclose(torch.linalg.inv(P)),
)
print(
    "norms",
    torch.linalg.norm(P),
    torch.linalg.norm(P, "nuc"),
    torch.linalg.norm(P, 2),
    torch.linalg.norm(P, -2),
    torch.linalg.norm(P, ord=float("inf")),
    torch.linalg.vector_norm(P, ord=3, dim=0),
)
print("cond", torch.linalg.cond(P), torch.linalg.cond(P, "fro"), torch.linalg.inv_ex(P).info)
print(
    "cross",
    torch.linalg.cross(torch.tensor([1.0, 0, 0]), torch.tensor([0.0, 1, 0])),
    torch.linalg.multi_dot([P, P, P[:, :1]]).shape,
)
print(
    "vander",
    torch.linalg.vander(torch.tensor([1.0, 2.0, 3.0])),
    torch.linalg.householder_product(*torch.geqrf(P)).allclose(torch.linalg.qr(P).Q),
)
LU, piv = torch.linalg.lu_factor(P)
print("lu", piv, torch.allclose(torch.linalg.lu_solve(LU, piv, P), torch.eye(4)))
Pm, Lm, Um = torch.linalg.lu(P)
print("plu", torch.allclose(Pm @ Lm @ Um, P))
print(
    "gradcheck",
    gradcheck(
        lambda a: torch.linalg.eigh(a @ a.mT)[0], (torch.randn(2, 3, 3, requires_grad=True),)
    ),
    gradcheck(lambda a: torch.linalg.det(a), (torch.randn(3, 3, requires_grad=True),)),
    gradcheck(
        lambda a: torch.linalg.lstsq(a, torch.ones(5, 1)).solution,
        (torch.randn(5, 2, requires_grad=True),),
    ),
    gradcheck(torch.linalg.matrix_exp, (torch.randn(3, 3, requires_grad=True),)),
)
