"""A custom autograd.Function (with a saved tensor and a non-tensor argument) and gradcheck."""
import torch
from torch.autograd import Function, gradcheck, gradgradcheck


class SoftClamp(Function):
    """y = lo + (hi - lo) * sigmoid(x), with a hand-written backward."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.span = hi - lo
        return lo + ctx.span * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)          # recomputed, so the backward is itself differentiable
        return grad_out * ctx.span * s * (1 - s), None, None


class CubeRoot(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.sign() * x.abs().pow(1.0 / 3.0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g / (3 * y * y)


torch.manual_seed(0)
x = torch.randn(6, dtype=torch.double, requires_grad=True)
print("gradcheck softclamp", gradcheck(lambda t: SoftClamp.apply(t, -1.0, 2.0), (x,), eps=1e-6,
                                       atol=1e-6))
print("gradgradcheck softclamp", gradgradcheck(lambda t: SoftClamp.apply(t, -1.0, 2.0), (x,)))
z = (torch.rand(5, dtype=torch.double) + 0.5).requires_grad_()
print("gradcheck cuberoot", gradcheck(CubeRoot.apply, (z,)))

y = SoftClamp.apply(x, -1.0, 2.0)
print("grad_fn", type(y.grad_fn).__name__)
y.sum().backward()
print("grad", x.grad.numpy().round(6).tolist())
ref = torch.autograd.grad((-1.0 + 3.0 * torch.sigmoid(x)).sum(), x)[0]
print("matches autograd", torch.allclose(x.grad, ref))

# use inside a model
w = torch.randn(3, 4, requires_grad=True)
inp = torch.randn(5, 3)
opt = torch.optim.SGD([w], lr=0.1)
for i in range(5):
    out = SoftClamp.apply(inp @ w, 0.0, 1.0)
    loss = ((out - 0.25) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {i} loss {loss.item():.6f}")
print("w", w.detach().view(-1)[:4].tolist())
