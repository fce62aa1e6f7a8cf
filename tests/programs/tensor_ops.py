"""Index-heavy tensor manipulation: scatter/gather, topk, sort, unique, bincount, masking."""

import torch

torch.manual_seed(1)
x = torch.randn(6, 5)
idx = torch.tensor([[0, 1, 2, 0, 1], [2, 2, 1, 0, 0]])
print(torch.zeros(3, 5).scatter_add_(0, idx, x[:2]))
print(x.gather(1, torch.tensor([[0], [4], [2], [1], [3], [0]])).squeeze(1))
v, i = x.topk(2, dim=1)
print(v, i)
s, si = torch.sort(x[:, 0], descending=True)
print(s, si, torch.argsort(x[0]))
labels = torch.tensor([3, 1, 3, 0, 1, 1, 7])
u, inv, cnt = torch.unique(labels, return_inverse=True, return_counts=True)
print(u, inv, cnt, torch.bincount(labels), torch.bincount(labels, minlength=10).shape)
print(torch.cumsum(x[0], 0), torch.cumprod(x[1].abs(), 0), x[2].cummax(0).values)
m = x > 0
print(m.sum(), x[m].shape, torch.where(m, x, torch.zeros_like(x)).sum(), x.masked_fill(~m, -1.0)[0])
print(torch.nonzero(m[:2]), m.nonzero(as_tuple=True)[1][:4])
print(
    torch.stack([x[0], x[1]], 1).shape,
    torch.cat([x, x], -1).shape,
    [c.shape for c in x.chunk(4, 0)],
)
print(
    [s.shape for s in x.split([1, 4], dim=1)],
    torch.repeat_interleave(torch.tensor([1, 2]), torch.tensor([2, 3])),
)
print(
    torch.roll(torch.arange(6), 2),
    torch.flip(torch.arange(6).view(2, 3), [1]),
    torch.arange(9).view(3, 3).tril(-1),
)
print(
    torch.diag_embed(torch.tensor([[1.0, 2.0], [3.0, 4.0]])),
    torch.einsum("ij,jk->ik", x[:2], x[:5].T).shape,
)
print(x.view(-1)[torch.randperm(30)[:5]].shape, torch.linspace(0, 1, 5), torch.logspace(0, 2, 3))
a = torch.arange(24).reshape(2, 3, 4)
print(
    a.permute(2, 0, 1).contiguous().view(4, -1)[1],
    a.transpose(0, 2).shape,
    a.unflatten(2, (2, 2)).shape,
)
print(a.flatten(1).max(dim=1), a.float().mean((0, 2)), a.float().std(1, keepdim=True).shape)
print(torch.clamp(x, -0.5, 0.5)[0], x.clamp(min=0).sum(), torch.isclose(x, x + 1e-9).all())
print(
    torch.full((2, 2), 7),
    torch.eye(3, dtype=torch.int64),
    torch.ones_like(a, dtype=torch.float16).dtype,
)
print(
    torch.tensor([1.5, -2.5, 0.5]).round(),
    torch.tensor([1.7, -1.7]).trunc(),
    torch.tensor([5, -5]) // 3,
    torch.tensor([5, -5]) % 3,
)
y = x.clone().requires_grad_()
z = (y.index_select(0, torch.tensor([0, 0, 3])) * torch.arange(5.0)).sum() + y[y > 0.5].pow(2).sum()
z.backward()
print(y.grad)
print(
    torch.searchsorted(torch.tensor([1.0, 3.0, 5.0, 7.0]), torch.tensor([0.0, 3.0, 6.0, 9.0])),
    torch.bucketize(torch.tensor([2.0, 6.0]), torch.tensor([1.0, 5.0])),
)
print(
    torch.kron(torch.eye(2), torch.ones(2, 2)),
    torch.cartesian_prod(torch.tensor([1, 2]), torch.tensor([3, 4])),
)
print(torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")[1], torch.tril_indices(3, 3))
