"""A two-layer graph convolution network with a sparse normalized adjacency, message passing
by index_add_ and scatter_reduce, and a GAT-style attention with softmax over neighbours."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)
n, f = 12, 6
edges = torch.randint(0, n, (2, 30))
edges = torch.cat([edges, edges.flip(0), torch.arange(n).repeat(2, 1)], dim=1)
edges = torch.unique(edges, dim=1)
print(edges.shape)
deg = torch.zeros(n).index_add_(0, edges[0], torch.ones(edges.shape[1]))
w = deg[edges[0]].rsqrt() * deg[edges[1]].rsqrt()
adj = torch.sparse_coo_tensor(edges, w, (n, n)).coalesce()
print(adj.is_sparse, adj._nnz(), adj.to_dense().sum().item())
x = torch.randn(n, f)
y = torch.randint(0, 3, (n,))


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(f, 8)
        self.l2 = nn.Linear(8, 3)

    def forward(self, x, adj):
        h = F.relu(torch.sparse.mm(adj, self.l1(x)))
        h = F.dropout(h, 0.2, self.training)
        return torch.sparse.mm(adj, self.l2(h))


class GAT(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(f, 8, bias=False)
        self.a = nn.Parameter(torch.randn(16) * 0.1)

    def forward(self, x, edges):
        h = self.lin(x)
        src, dst = edges
        e = F.leaky_relu(torch.cat([h[src], h[dst]], 1) @ self.a, 0.2)
        emax = torch.full((n,), -1e9).scatter_reduce(0, dst, e, reduce="amax", include_self=True)
        ex = (e - emax[dst]).exp()
        den = torch.zeros(n).index_add(0, dst, ex)
        alpha = ex / den[dst]
        return torch.zeros(n, 8).index_add_(0, dst, alpha[:, None] * h[src])


for Model, arg in ((GCN, adj), (GAT, edges)):
    torch.manual_seed(0)
    m = Model()
    head = nn.Linear(3 if Model is GCN else 8, 3)
    opt = torch.optim.SGD(
        list(m.parameters()) + list(head.parameters()), lr=0.1, momentum=0.9, nesterov=True
    )
    for ep in range(5):
        m.train()
        opt.zero_grad()
        out = head(m(x, arg))
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        print(Model.__name__, ep, round(loss.item(), 5))
    m.eval()
    print((head(m(x, arg)).argmax(1) == y).sum().item())
