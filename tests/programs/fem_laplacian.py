"""Finite elements and graph Laplacians as in numerical-analysis and spectral-clustering
notebooks: P1 stiffness and mass matrices assembled element by element with index_add_ and as
a sparse COO tensor (duplicates summed by coalesce), Dirichlet boundary conditions, a Poisson
solve checked against the exact solution, generalized eigenvalues (eigh, lobpcg), a k-NN graph
Laplacian for spectral clustering, torch.sparse.mm products and a gradient through assembly."""

import math
import torch

torch.manual_seed(2)
torch.set_default_dtype(torch.float64)

# 1-D P1 elements on a non-uniform mesh of [0, 1]
ne = 24
nodes = torch.sort(torch.cat([torch.tensor([0.0, 1.0]), torch.rand(ne - 1)])).values
elems = torch.stack([torch.arange(ne), torch.arange(1, ne + 1)], 1)
h = nodes[elems[:, 1]] - nodes[elems[:, 0]]
Ke = torch.stack([torch.stack([1 / h, -1 / h], 1), torch.stack([-1 / h, 1 / h], 1)], 1)
Me = h[:, None, None] / 6 * torch.tensor([[2.0, 1.0], [1.0, 2.0]])
rows = elems[:, :, None].expand(-1, 2, 2).reshape(-1)
cols = elems[:, None, :].expand(-1, 2, 2).reshape(-1)
K = torch.sparse_coo_tensor(torch.stack([rows, cols]), Ke.reshape(-1), (ne + 1, ne + 1))
print("uncoalesced", K.is_coalesced(), K._nnz())
K = K.coalesce()
M = torch.sparse_coo_tensor(torch.stack([rows, cols]), Me.reshape(-1), (ne + 1, ne + 1)).coalesce()
print("coalesced", K._nnz(), K.indices()[:, :4], K.values()[:4])
Kd = torch.zeros((ne + 1) ** 2).index_add_(0, rows * (ne + 1) + cols, Ke.reshape(-1)).view(
    ne + 1, ne + 1)
print("index_add assembly", torch.allclose(Kd, K.to_dense()), Kd.sum().abs().item() < 1e-9)

# -u'' = pi^2 sin(pi x), u(0) = u(1) = 0; load by the mass matrix (interpolated source)
f = math.pi ** 2 * torch.sin(math.pi * nodes)
b = torch.sparse.mm(M, f.unsqueeze(1)).squeeze(1)
inner = torch.arange(1, ne)
Kin = K.to_dense()[inner][:, inner]
u = torch.zeros(ne + 1)
u[inner] = torch.linalg.solve(Kin, b[inner])
print("poisson", round((u - torch.sin(math.pi * nodes)).abs().max().item(), 6), u[ne // 2])

# generalized eigenproblem K v = lambda M v: lambda_1 ~ pi^2
Md = M.to_dense()[inner][:, inner]
L = torch.linalg.cholesky(Md)
Linv = torch.linalg.solve_triangular(L, torch.eye(ne - 1), upper=False)
lam = torch.linalg.eigvalsh(Linv @ Kin @ Linv.T)
print("eigs", lam[:3], [round(v, 4) for v in (math.pi ** 2, 4 * math.pi ** 2)])
lam_lo, vec = torch.lobpcg(Kin, k=2, B=Md, X=torch.randn(ne - 1, 2), largest=False, niter=200,
                           tol=1e-10)
print("lobpcg", lam_lo, torch.allclose(lam_lo, lam[:2], rtol=1e-6))

# spectral clustering of two rings with a k-NN graph Laplacian
n = 40
ang = torch.rand(n) * 2 * math.pi
r = torch.where(torch.arange(n) < n // 2, torch.tensor(1.0), torch.tensor(3.0))
pts = torch.stack([r * torch.cos(ang), r * torch.sin(ang)], 1) + 0.05 * torch.randn(n, 2)
d = torch.cdist(pts, pts)
knn = d.topk(6, largest=False).indices[:, 1:]
src = torch.arange(n).repeat_interleave(5)
dst = knn.reshape(-1)
W = torch.zeros(n, n)
W.index_put_((src, dst), torch.ones(src.numel()))
W = torch.maximum(W, W.T)
deg = W.sum(1)
Lsym = torch.eye(n) - W / torch.sqrt(deg[:, None] * deg[None, :])
evals, evecs = torch.linalg.eigh(Lsym)
labels = (evecs[:, 1] > 0).long()
agree = (labels == (torch.arange(n) >= n // 2).long()).float().mean().item()
print("clusters", evals[:3].abs() < 1e-8, max(agree, 1 - agree), torch.bincount(labels))
Ws = W.to_sparse()
deg_sparse = torch.sparse.sum(Ws, dim=1).to_dense()
print("sparse", Ws.layout, Ws._nnz(), torch.equal(deg_sparse, deg),
      torch.allclose(torch.sparse.mm(Ws, pts), W @ pts))

# gradient of the Dirichlet energy through assembly with respect to the nodes' positions
pos = nodes.clone().requires_grad_(True)
hh = pos[1:] - pos[:-1]
energy = 0.5 * ((u[1:] - u[:-1]) ** 2 / hh).sum() - (b * u).sum()
energy.backward()
print("energy", round(energy.item(), 8), pos.grad[1:5])
vals = torch.zeros(ne + 1).scatter_add_(0, elems.reshape(-1), h.repeat_interleave(2) / 2)
print("lumped mass", torch.allclose(vals, M.to_dense().sum(1)), vals[:3])
