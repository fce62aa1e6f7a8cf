"""Numerics people trip over: integer division and remainder signs, type promotion with Python
scalars and 0-d tensors, bool arithmetic, float16/bfloat16 rounding and printing, integer
overflow, nan/inf propagation, set_printoptions."""

import math
import torch

a = torch.tensor([7, -7, 7, -7])
b = torch.tensor([2, 2, -2, -2])
print(a // b, a % b, torch.fmod(a, b), torch.remainder(a, b))
print(
    torch.div(a, b), torch.div(a, b, rounding_mode="trunc"), torch.div(a, b, rounding_mode="floor")
)
print(a / 2, (a / 2).dtype, a.true_divide(b).dtype)
print(torch.tensor([5.5, -5.5]) // 2, torch.tensor([5.5, -5.5]) % -2)
print(torch.tensor([-0.0, 0.0]) % 3, torch.fmod(torch.tensor([-4.5]), 2))

i8 = torch.tensor([1, 2], dtype=torch.int8)
print((i8 + 1).dtype, (i8 + 1.0).dtype, (i8 + torch.tensor(1.0)).dtype, (i8 * True).dtype)
print((i8 + torch.tensor(300)).dtype, (i8 + torch.tensor([300])).dtype)
h = torch.tensor([1.0, 2.0], dtype=torch.float16)
print(
    (h + 1.0).dtype,
    (h + torch.tensor(1.0, dtype=torch.float64)).dtype,
    (h * torch.tensor([2.0])).dtype,
)
print(
    (torch.tensor([1, 2]) * 2.5).dtype,
    (torch.tensor([True]) + 1).dtype,
    (torch.tensor([True]) + True).dtype,
)
print(
    torch.tensor([1, 2], dtype=torch.uint8) - 3,
    torch.tensor([200], dtype=torch.uint8) + torch.tensor([100], dtype=torch.uint8),
)
print(torch.tensor([127], dtype=torch.int8) + 1, torch.tensor([2**31 - 1], dtype=torch.int32) + 1)
print(torch.tensor(2**62) * 4, torch.iinfo(torch.int16).max, torch.finfo(torch.bfloat16).eps)

bm = torch.tensor([True, False, True])
print(bm.sum(), bm.sum().dtype, bm & ~bm, bm | torch.tensor([False, True, False]), bm ^ True)
print(
    bm.float().mean(),
    bm.int().cumsum(0),
    (bm * 3).dtype,
    bm.any(),
    torch.logical_xor(bm, bm.flip(0)),
)
print(torch.tensor([0, 3, -1]).bool(), torch.tensor([0.0, float("nan")]).bool())

x16 = torch.tensor([0.1, 1000.0, 65504.0, 1e-5, 3.14159], dtype=torch.float16)
print(x16)
print(x16 * 2, (x16 * 2).isinf())
xb = torch.tensor([0.1, 1000.0, 3.14159, 1e-5, 256.5], dtype=torch.bfloat16)
print(xb, xb.float())
print(torch.tensor([1.0], dtype=torch.bfloat16) + torch.tensor([1e-3], dtype=torch.bfloat16))
print(torch.arange(5, dtype=torch.float16).sum(), torch.ones(3000, dtype=torch.float16).sum())
print(
    torch.tensor(1 / 3, dtype=torch.float16).item(),
    torch.tensor(1 / 3, dtype=torch.bfloat16).item(),
)
print(x16.to(torch.int32), xb.to(torch.int64), torch.tensor([2.7, -2.7]).to(torch.int64))

nan, inf = float("nan"), float("inf")
v = torch.tensor([1.0, nan, inf, -inf, 0.0])
print(v + 1, v * 0, v.max(), v.min(), v.sum(), v.argmax(), torch.nansum(v))
print(
    torch.maximum(v, torch.zeros(5)),
    torch.fmax(v, torch.zeros(5)),
    torch.isfinite(v),
    torch.isnan(v).any(),
)
print(
    torch.tensor([1.0, -1.0, 0.0]) / 0,
    torch.log(torch.tensor([0.0, -1.0])),
    torch.sqrt(torch.tensor(-1.0)),
)
print(torch.sort(v).values, torch.sort(v, descending=True).indices, torch.topk(v, 2).values)
print(torch.nanmean(v[:2]), torch.tensor([nan, 1.0]).amax(), torch.tensor([nan, 2.0]).clamp(0, 1))
print(
    torch.exp(torch.tensor([88.0, 89.0, 710.0])),
    torch.exp(torch.tensor([710.0], dtype=torch.float64)),
)
print(torch.tensor([1e-45, 1e-46]), torch.tensor([3e38]) * 10, torch.tensor(0.0).reciprocal())

torch.set_printoptions(precision=2)
print(torch.tensor([math.pi, math.e, 1e-3]))
torch.set_printoptions(sci_mode=True)
print(torch.tensor([12345.678, 0.5]))
torch.set_printoptions(profile="default")
print(torch.tensor([1e8, 1.0]), torch.tensor([1e-5, 1.0]), torch.tensor([123456789.0]))
print(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.5, 200.25]), torch.tensor([-0.0, 0.0]))
print(torch.arange(1200.0))
print(torch.tensor([[1e10, 1.0], [2.0, 3.0]], dtype=torch.float64))
print(torch.tensor(3), torch.tensor(3.0), torch.tensor(True), torch.tensor([], dtype=torch.int64))
print(torch.tensor([1 + 2j, -0.5j]), torch.zeros(2, 0), torch.tensor(2.5, dtype=torch.float16))
print(
    torch.round(torch.tensor([2.5, 3.5, -2.5, 0.125]), decimals=2),
    torch.round(torch.tensor([1234.5]), decimals=-2),
)
print(torch.tensor([1 + 2j, 3 + 0j, 0j]).reciprocal(), torch.tensor([-0.0, nan, -2.0]).sign())
x = torch.zeros(2, 3, 4)
print(x.shape[1:], x.shape[:1] + (5,), x.shape * 1, x.size()[-2:], x[0].shape[::-1])
