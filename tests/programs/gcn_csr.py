"""A graph convolution network on a CSR normalized adjacency (built from a COO edge list and
converted with to_sparse_csr), trained with Adam; a learnable edge weighting through
sparse_csr_tensor(values=...) and torch.sparse.mm; and a graph-Laplacian solve by conjugate
gradients with CSR matrix-vector products, its solution differentiated with respect to the
right-hand side."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)
n, f, classes = 16, 5, 3
src = torch.randint(0, n, (40,))
dst = torch.randint(0, n, (40,))
edges = torch.cat([torch.stack([src, dst]), torch.stack([dst, src]),
                   torch.arange(n).repeat(2, 1)], dim=1)
edges = torch.unique(edges, dim=1)
deg = torch.zeros(n).index_add_(0, edges[0], torch.ones(edges.shape[1]))
w = deg[edges[0]].rsqrt() * deg[edges[1]].rsqrt()
adj = torch.sparse_coo_tensor(edges, w, (n, n)).coalesce().to_sparse_csr()
print(adj.layout, adj.is_sparse, adj.is_sparse_csr, adj.shape, adj._nnz())
print(adj.crow_indices()[:6].tolist(), adj.col_indices().dtype, adj.values().dtype)
print("row sums", [round(v, 4) for v in adj.to_dense().sum(1)[:4].tolist()])

x = torch.randn(n, f)
y = torch.randint(0, classes, (n,))


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(f, 8)
        self.l2 = nn.Linear(8, classes)

    def forward(self, x, adj):
        h = F.relu(adj @ self.l1(x))
        return torch.mm(adj, self.l2(h))


model = GCN()
opt = torch.optim.Adam(model.parameters(), lr=0.05)
for step in range(30):
    opt.zero_grad()
    loss = F.cross_entropy(model(x, adj), y)
    loss.backward()
    opt.step()
    if step % 10 == 0 or step == 29:
        print(step, round(loss.item(), 5))
acc = (model(x, adj).argmax(1) == y).float().mean().item()
print("accuracy", round(acc, 4))

# learnable edge weights: the gradient of the CSR values, through sparse.mm
logits = torch.zeros(adj._nnz(), requires_grad=True)
opt2 = torch.optim.SGD([logits], lr=0.5)
target = torch.randn(n, 2)
feat = torch.randn(n, 2)
for step in range(5):
    opt2.zero_grad()
    a = torch.sparse_csr_tensor(adj.crow_indices(), adj.col_indices(),
                                torch.sigmoid(logits) * adj.values(), adj.shape)
    out = torch.sparse.mm(a, feat)
    err = (out - target).pow(2).mean()
    err.backward()
    opt2.step()
    print("edge step", step, round(err.item(), 5), round(logits.grad.abs().sum().item(), 5))

# a graph Laplacian (plus a ridge) solved by conjugate gradients with CSR products, in float64
lap = (torch.eye(n, dtype=torch.float64) * 1.5
       - adj.to_dense().double()).to_sparse_csr()
print(lap.layout, lap.dtype, lap._nnz(), round(lap.sum().item(), 4))
b = torch.randn(n, dtype=torch.float64, requires_grad=True)


def cg(mat, rhs, iters=40):
    sol = torch.zeros_like(rhs)
    r = rhs - mat @ sol
    p = r
    rs = r.dot(r)
    for _ in range(iters):
        ap = mat @ p
        alpha = rs / p.dot(ap)
        sol = sol + alpha * p
        r = r - alpha * ap
        rs_new = r.dot(r)
        p = r + (rs_new / rs) * p
        rs = rs_new
    return sol


sol = cg(lap, b)
print("residual", (lap @ sol - b).norm().item() < 1e-8)
print("solution", [round(v, 5) for v in sol[:5].tolist()])
sol.pow(2).sum().backward()
print("d|x|^2/db", [round(v, 5) for v in b.grad[:5].tolist()])
lap_t = lap.t()
print(lap_t.layout, torch.allclose(lap_t.to_dense(), lap.to_dense().t()))
scaled = (lap * 2.0 + lap).to_dense()
print("scaled", round(scaled.sum().item(), 4), round(scaled.diagonal().mean().item(), 4))
