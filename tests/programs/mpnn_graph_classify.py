"""Graph classification with message passing written by hand (PyG style without PyG): a
mini-batch of small graphs glued into one disjoint graph (batch vector, ptr, edge offsets),
GraphSAGE (mean/max aggregation with scatter_reduce, include_self=False), GIN (scatter_add_),
a GAT layer with a per-destination segment softmax, an edge-conditioned layer, global
mean/max/add pooling, to_dense_batch with padding, and a sparse-adjacency propagation."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(9)


def random_graph(kind):
    n = int(torch.randint(5, 10, ()).item())
    if kind == 0:          # ring
        src = torch.arange(n)
        dst = (src + 1) % n
    else:                  # star plus random chords
        src = torch.zeros(n - 1, dtype=torch.long)
        dst = torch.arange(1, n)
        extra = torch.randint(1, n, (2, 2))
        src, dst = torch.cat([src, extra[0]]), torch.cat([dst, extra[1]])
    ei = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    x = torch.randn(n, 4) * 0.1 + kind
    return x, ei


graphs = [random_graph(k % 2) for k in range(24)]
ys = torch.tensor([k % 2 for k in range(24)])


def collate(items):
    xs, eis, batch = [], [], []
    offset = 0
    for i, (x, ei) in enumerate(items):
        xs.append(x)
        eis.append(ei + offset)
        batch.append(torch.full((x.size(0),), i, dtype=torch.long))
        offset += x.size(0)
    batch = torch.cat(batch)
    counts = torch.bincount(batch)
    ptr = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)])
    return torch.cat(xs), torch.cat(eis, 1), batch, ptr


x, ei, batch, ptr = collate(graphs[:4])
print("batch", x.shape, ei.shape, ptr.tolist(), batch.bincount().tolist())


def scatter(src, index, dim_size, reduce):
    out = torch.zeros(dim_size, src.size(1), dtype=src.dtype)
    idx = index.unsqueeze(1).expand_as(src)
    return out.scatter_reduce(0, idx, src, reduce=reduce, include_self=False)


def segment_softmax(e, index, n):
    e_max = torch.full((n,), float("-inf")).scatter_reduce(0, index, e, "amax")
    e = (e - e_max.index_select(0, index)).exp()
    denom = torch.zeros(n).scatter_add_(0, index, e)
    return e / (denom[index] + 1e-16)


class SAGEConv(nn.Module):
    def __init__(self, i, o, aggr):
        super().__init__()
        self.aggr = aggr
        self.lin_l, self.lin_r = nn.Linear(i, o), nn.Linear(i, o, bias=False)

    def forward(self, x, ei):
        msg = x.index_select(0, ei[0])
        agg = scatter(msg, ei[1], x.size(0), self.aggr)
        return F.normalize(self.lin_l(agg) + self.lin_r(x), p=2.0, dim=-1)


class GINConv(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(nn.Linear(i, o), nn.BatchNorm1d(o), nn.ReLU(), nn.Linear(o, o))

    def forward(self, x, ei):
        agg = torch.zeros_like(x).scatter_add_(0, ei[1].unsqueeze(-1).expand(-1, x.size(1)),
                                               x[ei[0]])
        return self.mlp((1 + self.eps) * x + agg)


class GATConv(nn.Module):
    def __init__(self, i, o, heads=2):
        super().__init__()
        self.h, self.o = heads, o
        self.lin = nn.Linear(i, heads * o, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, o))
        self.att_dst = nn.Parameter(torch.empty(1, heads, o))
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(self, x, ei):
        n = x.size(0)
        loops = torch.arange(n).repeat(2, 1)
        ei = torch.cat([ei, loops], 1)
        h = self.lin(x).view(n, self.h, self.o)
        a_s = (h * self.att_src).sum(-1)
        a_d = (h * self.att_dst).sum(-1)
        e = F.leaky_relu(a_s[ei[0]] + a_d[ei[1]], 0.2)            # (E, heads)
        alpha = torch.stack([segment_softmax(e[:, k], ei[1], n) for k in range(self.h)], 1)
        out = torch.zeros(n, self.h, self.o).index_add_(0, ei[1], alpha.unsqueeze(-1) * h[ei[0]])
        return out.mean(1)


class EdgeConv(nn.Module):      # DGCNN-style: max over neighbours of MLP([x_i, x_j - x_i])
    def __init__(self, i, o):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(2 * i, o), nn.ReLU())

    def forward(self, x, ei):
        xi, xj = x[ei[1]], x[ei[0]]
        return scatter(self.mlp(torch.cat([xi, xj - xi], -1)), ei[1], x.size(0), "amax")


def global_pool(x, batch, size):
    add = torch.zeros(size, x.size(1)).index_add_(0, batch, x)
    mean = add / torch.bincount(batch, minlength=size).clamp(min=1).unsqueeze(1)
    mx = scatter(x, batch, size, "amax")
    return torch.cat([mean, mx, add], 1)


def to_dense_batch(x, batch, ptr):
    counts = ptr[1:] - ptr[:-1]
    pos = torch.arange(x.size(0)) - ptr[batch]
    out = x.new_zeros(counts.numel(), int(counts.max()), x.size(1))
    out[batch, pos] = x
    mask = torch.zeros(counts.numel(), int(counts.max()), dtype=torch.bool)
    mask[batch, pos] = True
    return out, mask


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([SAGEConv(4, 16, "mean"), GINConv(16, 16),
                                    GATConv(16, 16), SAGEConv(16, 16, "amax"), EdgeConv(16, 16)])
        self.head = nn.Sequential(nn.Linear(48, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))

    def forward(self, x, ei, batch, size):
        for conv in self.convs:
            x = F.elu(conv(x, ei))
        return self.head(global_pool(x, batch, size))


net = Net()
opt = torch.optim.Adam(net.parameters(), lr=5e-3, weight_decay=5e-4)
for epoch in range(4):
    net.train()
    order = torch.randperm(24).tolist()
    total = 0.0
    for i in range(0, 24, 8):
        x, ei, batch, ptr = collate([graphs[j] for j in order[i:i + 8]])
        loss = F.cross_entropy(net(x, ei, batch, 8), ys[order[i:i + 8]])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / 3:.5f} gin eps {net.convs[1].eps.item():.5f}")
net.eval()
x, ei, batch, ptr = collate(graphs)
with torch.no_grad():
    logits = net(x, ei, batch, 24)
print("acc", (logits.argmax(1) == ys).float().mean().item())
dense, mask = to_dense_batch(x, batch, ptr)
print("dense", dense.shape, mask.sum(1).tolist()[:6], torch.equal(dense[mask], x))

# sparse propagation: symmetric normalized adjacency with self loops, 3 hops (SGC)
n = x.size(0)
loops = torch.arange(n).repeat(2, 1)
ei2 = torch.cat([ei, loops], 1)
deg = torch.zeros(n).scatter_add_(0, ei2[0], torch.ones(ei2.size(1)))
w = deg[ei2[0]].pow(-0.5) * deg[ei2[1]].pow(-0.5)
A = torch.sparse_coo_tensor(ei2, w, (n, n)).coalesce()
h = x
for _ in range(3):
    h = torch.sparse.mm(A, h)
feat = global_pool(h, batch, 24)
sgc = nn.Linear(12, 2)
opt = torch.optim.LBFGS(sgc.parameters(), max_iter=20)


def closure():
    opt.zero_grad()
    loss = F.cross_entropy(sgc(feat), ys)
    loss.backward()
    return loss


opt.step(closure)
print("sgc loss", round(closure().item(), 5), "row sums", torch.sparse.sum(A, 1).to_dense()[:4])
