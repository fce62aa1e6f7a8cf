"""More tensor manipulation: searchsorted, bucketize, kthvalue, median, mode, histc, diff,
tensor_split, unbind, rot90, tril_indices, combinations, cartesian_prod, isin, take_along_dim."""

import torch

torch.manual_seed(3)
x = torch.randn(4, 6)
s = torch.sort(x.flatten()).values
q = torch.tensor([-1.0, 0.0, 0.5, 2.0])
print(torch.searchsorted(s, q), torch.searchsorted(s, q, right=True), torch.bucketize(q, s))
print(torch.kthvalue(x, 2, dim=1), x.median(dim=0))
print(torch.median(x), torch.nanmedian(torch.tensor([1.0, float("nan"), 3.0, 2.0])))
ints = torch.tensor([[1, 2, 2, 3], [4, 4, 1, 1]])
print(torch.mode(ints, dim=1), torch.histc(x, bins=5, min=-2, max=2))
print(torch.diff(x[0]), torch.diff(x, n=2, dim=1).shape, torch.diff(x[0], prepend=torch.zeros(1)))
print(
    [t.shape for t in torch.tensor_split(torch.arange(10), 3)],
    torch.tensor_split(torch.arange(10), [2, 5]),
)
print(torch.unbind(x[:2], 1)[0], torch.rot90(torch.arange(6).view(2, 3), 1, [0, 1]))
print(torch.tril_indices(3, 3), torch.triu_indices(3, 4, 1))
print(
    torch.combinations(torch.tensor([1, 2, 3])),
    torch.cartesian_prod(torch.tensor([1, 2]), torch.tensor([5, 6])),
)
print(
    torch.isin(ints, torch.tensor([1, 4])),
    torch.take_along_dim(x, x.argmax(1, keepdim=True), 1).squeeze(),
)
print(torch.logcumsumexp(x[0], 0), torch.cummin(x[1], 0).indices)
print(
    torch.nan_to_num(
        torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0]), nan=0.0, posinf=9.0
    )
)
print(torch.clamp(x[0], min=torch.zeros(6), max=torch.full((6,), 0.5)))
print(torch.count_nonzero(x > 0, dim=1), torch.any(x > 2), torch.all(x > -5, dim=0))
print(torch.aminmax(x), torch.std_mean(x, dim=1, unbiased=False))
print(torch.flatten(torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")[1]))
print(torch.block_diag(torch.ones(2, 2), 2 * torch.ones(1, 3)))
print(torch.kron(torch.eye(2), torch.tensor([[1.0, 2.0], [3.0, 4.0]])))
print(torch.trapezoid(torch.tensor([1.0, 2.0, 3.0])))
print(torch.cdist(x[:2], x[2:], p=1), torch.dist(x[0], x[1], p=3))
print(torch.renorm(x, 2, 0, 1.0).norm(dim=1), torch.atleast_2d(torch.tensor(1.0)).shape)
print(
    torch.heaviside(torch.tensor([-1.0, 0.0, 2.0]), torch.tensor([0.5])),
    torch.signbit(torch.tensor([-0.0, 1.0])),
)
print(
    torch.floor_divide(torch.tensor([7, -7]), 2),
    torch.remainder(torch.tensor([-3.0, 3.0]), 2),
    torch.fmod(torch.tensor([-3.0, 3.0]), 2),
)
print(
    x.unfold(1, 2, 2).shape,
    x.new_zeros(2, 2).dtype,
    x.new_tensor([1, 2]).dtype,
    x.type(torch.int32)[0],
)
print(
    torch.einsum("bi,bj->bij", x[:2, :2], x[:2, :3]).shape,
    torch.tensordot(x, x, dims=([1], [1])).shape,
)
print(
    torch.scatter_reduce(
        torch.zeros(3),
        0,
        torch.tensor([0, 1, 0, 2]),
        torch.tensor([1.0, 2.0, 3.0, 4.0]),
        reduce="amax",
    )
)
print(
    torch.index_select(x, 1, torch.tensor([0, 5])).shape,
    x.index_fill(1, torch.tensor([0]), -1.0)[0, :2],
)
print(torch.bitwise_and(torch.tensor([12]), torch.tensor([10])), torch.tensor([1, 2, 3]) << 2)
print(torch.frexp(torch.tensor([8.0, 0.3])), torch.ldexp(torch.tensor([1.0]), torch.tensor([3])))
print(torch.result_type(torch.tensor([1]), 1.0), torch.promote_types(torch.int32, torch.float16))
