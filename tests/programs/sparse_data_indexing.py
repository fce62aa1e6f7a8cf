"""Index-heavy data wrangling as in recommender / graph / event-log code: per-group statistics
with scatter_add_ and scatter_reduce, index_put_ accumulate, segment ids from unique(
return_inverse), histograms and quantile bins (histc, bucketize, searchsorted), stable sorts
for ranking, top-k per row, run lengths, cumulative stats, einsum/tensordot/kron features, and a
gradient through gather/index_add."""

import torch

torch.manual_seed(5)
n_users, n_events = 6, 40
user = torch.randint(0, n_users, (n_events,))
item = torch.randint(0, 9, (n_events,))
value = torch.randn(n_events).abs() * 10
value[[3, 17]] = float("nan")  # missing measurements

ok = ~value.isnan()
print(
    "valid",
    ok.sum().item(),
    torch.masked_select(value, ~ok).shape,
    value.nanmean().round(decimals=4),
)
cnt = torch.zeros(n_users).scatter_add_(0, user[ok], torch.ones(int(ok.sum())))
tot = torch.zeros(n_users).index_add_(0, user[ok], value[ok])
print("per user", cnt.long().tolist(), (tot / cnt).round(decimals=4))
for red in ("sum", "prod", "mean", "amax", "amin"):
    r = torch.full((n_users,), -1.0).scatter_reduce(
        0, user[ok], value[ok], reduce=red, include_self=False
    )
    print(red, r[:4] if red != "prod" else r[:4].log().round(decimals=3))
print(
    "mean incl. self", torch.ones(n_users).scatter_reduce(0, user[ok], value[ok], reduce="mean")[:3]
)

M = torch.zeros(n_users, 9)
M.index_put_((user[ok], item[ok]), value[ok], accumulate=True)
print("matrix", M.count_nonzero().item(), M.sum(1).round(decimals=3), torch.allclose(M.sum(1), tot))
hits = torch.zeros(n_users, 9, dtype=torch.long)
hits.index_put_((user, item), torch.tensor(1), accumulate=True)
print("hits", hits.sum().item(), hits.max().item(), (hits > 1).nonzero().tolist()[:3])

codes, inverse, counts = torch.unique(item, return_inverse=True, return_counts=True)
print("unique", codes.tolist(), counts.tolist(), torch.equal(codes[inverse], item))
print(
    "unique nan",
    torch.unique(torch.tensor([2.0, float("nan"), 1.0, float("nan")]), return_counts=True),
)
pairs, pair_cnt = torch.unique(torch.stack([user, item], 1), dim=0, return_counts=True)
print("pairs", pairs.shape, pair_cnt.max().item(), pairs[:3].tolist())
runs = torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 2, 1, 3, 3]), return_counts=True)
print("runs", runs)
print(
    "bincount",
    torch.bincount(item, minlength=10).tolist(),
    torch.bincount(user, weights=value.nan_to_num()).round(decimals=3),
)

v = value[ok]
print("histc", torch.histc(v, bins=5, min=0, max=25).tolist())
h, edges = torch.histogram(v, bins=4)
print("histogram", h.tolist(), edges.round(decimals=4))
qs = torch.quantile(v, torch.tensor([0.25, 0.5, 0.75]))
bins = torch.bucketize(v, qs)
print(
    "quartile bins",
    bins.bincount().tolist(),
    qs.round(decimals=4),
    torch.searchsorted(qs, qs, right=True).tolist(),
)
print(
    "nanquantile",
    torch.nanquantile(value, 0.5).round(decimals=4),
    torch.nanmedian(value).round(decimals=4),
)

score = torch.tensor([3.0, 1.0, 3.0, 2.0, 1.0, 3.0])
order = torch.sort(score, descending=True, stable=True)
print("stable rank", order.indices.tolist(), torch.argsort(score, stable=True).tolist())
rank = torch.empty_like(order.indices)
rank[order.indices] = torch.arange(len(score))
print("rank", rank.tolist())
top = torch.topk(M, k=2, dim=1)
print("topk", top.indices.tolist(), top.values.round(decimals=3)[:2])
print("kth", torch.kthvalue(score, 3), score.argmax().item(), score.argmin().item())
print(
    "cum",
    torch.cumsum(score, 0),
    torch.cumprod(score, 0),
    torch.cummax(score, 0).indices.tolist(),
    torch.logcumsumexp(score, 0),
)

feat = torch.randn(4, 3)
print(
    "einsum",
    torch.einsum("ij,kj->ik", feat, feat).diagonal(),
    torch.einsum("ij->j", feat),
    torch.einsum("i,j->ij", feat[0], feat[1]).shape,
)
print("bilinear", torch.einsum("bi,ij,bj->b", feat, torch.eye(3) * 2, feat))
print(
    "tensordot",
    torch.tensordot(feat, torch.ones(3, 2), dims=1).shape,
    torch.tensordot(feat, feat, dims=([0, 1], [0, 1])),
)
print("kron", torch.kron(torch.tensor([[1, 0], [0, 2]]), torch.tensor([[1, 1]])))

emb = torch.randn(9, 4, requires_grad=True)
bag = torch.zeros(n_users, 4).index_add(0, user, emb[item])  # user profile = sum of item vectors
w = torch.randn(4)
loss = (bag @ w).pow(2).mean() + emb.gather(0, item[:5, None].expand(5, 4)).sum()
loss.backward()
print("grad rows", (emb.grad.abs().sum(1) > 0).sum().item(), emb.grad[item[0]].round(decimals=4))
print(
    "std const", torch.func.grad(lambda x: x.std() + x.sign().sum())(torch.tensor([2.0, 2.0, 2.0]))
)
print("sign", torch.tensor([-1.5, 0.0, float("nan")]).sign())
