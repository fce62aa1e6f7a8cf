"""The autograd API beyond backward(): new-style Functions (setup_context, vmap support, jvp),
once_differentiable, mark_non_differentiable, needs_input_grad, set_materialize_grads,
torch.autograd.functional (jacobian/hessian/vjp/jvp/hvp with vectorize and forward-mode
strategy), torch.func (jacrev/jacfwd/hessian under vmap, grad_and_value, has_aux), forward AD."""

import torch
import torch.autograd.forward_ad as fwAD
from torch.autograd.function import once_differentiable
from torch.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp, vmap

torch.manual_seed(17)
torch.set_default_dtype(torch.float64)


class SmoothAbs(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, eps):
        return torch.sqrt(x * x + eps)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, eps = inputs
        ctx.save_for_backward(x, output)
        ctx.save_for_forward(x, output)
        ctx.eps = eps

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * x / y, None

    @staticmethod
    def jvp(ctx, tx, teps):
        x, y = ctx.saved_tensors
        return tx * x / y


x = torch.randn(5, requires_grad=True)
y = SmoothAbs.apply(x, 1e-2)
y.sum().backward()
print("smoothabs", y.detach(), x.grad)
print("vmap(grad)", vmap(grad(lambda v: SmoothAbs.apply(v, 1e-2).sum()))(torch.randn(3, 4))[0])
with fwAD.dual_level():
    dual = fwAD.make_dual(x.detach(), torch.ones(5))
    out = SmoothAbs.apply(dual, 1e-2)
    print("fwd", fwAD.unpack_dual(out).tangent)
print(
    "gradcheck",
    torch.autograd.gradcheck(
        lambda v: SmoothAbs.apply(v, 0.1),
        (torch.randn(4, requires_grad=True),),
        check_forward_ad=True,
    ),
)


class SortWithIdx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        vals, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return vals, idx

    @staticmethod
    @once_differentiable
    def backward(ctx, gv, gi):
        (idx,) = ctx.saved_tensors
        return torch.zeros_like(gv).scatter(0, idx, gv)


v, i = SortWithIdx.apply(x)
print("nondiff", v.requires_grad, i.requires_grad, i.dtype)
x.grad = None
(v * torch.arange(5.0)).sum().backward()
print("sorted grad", x.grad)
v2, _ = SortWithIdx.apply(x)
g2 = torch.autograd.grad(v2.pow(2).sum(), x, create_graph=True)[0]
try:
    g2.sum().backward()
except RuntimeError as e:
    print("once_differentiable:", "trying to differentiate twice" in str(e))


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.set_materialize_grads(False)
        return a * b, a + b

    @staticmethod
    def backward(ctx, g1, g2):
        a, b = ctx.saved_tensors
        print("  needs", ctx.needs_input_grad, g1 is None, g2 is None)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = (g1 * b if g1 is not None else 0) + (g2 if g2 is not None else 0)
        if ctx.needs_input_grad[1]:
            gb = g1 * a if g1 is not None else None
        return ga, gb


a = torch.randn(3, requires_grad=True)
b = torch.randn(3)
p, s = Scale.apply(a, b)
p.sum().backward()
print("scale", a.grad)

f = lambda z: torch.stack([z[0] * z[1] ** 2, torch.sin(z[2]) * z[0], z.pow(3).sum()])
z0 = torch.tensor([1.0, 2.0, 0.5])
J1 = torch.autograd.functional.jacobian(f, z0)
J2 = torch.autograd.functional.jacobian(f, z0, vectorize=True)
J3 = torch.autograd.functional.jacobian(f, z0, vectorize=True, strategy="forward-mode")
print("jacobian", J1, torch.allclose(J1, J2), torch.allclose(J1, J3))
h = lambda z: z.pow(2).prod() + torch.cos(z).sum()
H = torch.autograd.functional.hessian(h, z0)
print(
    "hessian",
    H,
    torch.allclose(
        H,
        torch.autograd.functional.hessian(
            h, z0, vectorize=True, outer_jacobian_strategy="forward-mode"
        ),
    ),
)
print("vjp", torch.autograd.functional.vjp(f, z0, torch.ones(3)))
print("jvp", torch.autograd.functional.jvp(f, z0, torch.tensor([1.0, 0.0, 0.0])))
print(
    "hvp",
    torch.autograd.functional.hvp(h, z0, torch.ones(3))[1],
    torch.autograd.functional.vhp(h, z0, torch.ones(3))[1],
)
two = torch.autograd.functional.jacobian(lambda u, w: (u * w).sum(), (z0, z0 + 1))
print("multi-input", two)

batch = torch.randn(4, 3)
print(
    "vmap jacrev",
    vmap(jacrev(f))(batch).shape,
    torch.allclose(vmap(jacrev(f))(batch), vmap(jacfwd(f))(batch)),
)
print("vmap hessian", vmap(hessian(h))(batch)[1])
gv = grad_and_value(lambda z: (h(z), z.sum()), has_aux=True)(z0)
print("grad_and_value", gv[0], gv[1][0], gv[1][1])
print("jvp/vjp", jvp(torch.sin, (z0,), (torch.ones(3),)), vjp(torch.exp, z0)[1](torch.ones(3)))
print("argnums", grad(lambda u, w: (u * w**2).sum(), argnums=(0, 1))(z0, z0))
print(
    "chunked",
    jacrev(f, chunk_size=1)(z0).sum(),
    vmap(lambda r: r @ r, in_dims=1)(batch),
    vmap(torch.outer, in_dims=(0, None))(batch, z0).shape,
)

with fwAD.dual_level():
    xp = fwAD.make_dual(z0, torch.tensor([0.0, 1.0, 0.0]))
    yp = torch.linalg.norm(xp) * torch.tanh(xp).sum()
    print("forward-ad", fwAD.unpack_dual(yp).tangent)
w = torch.randn(3, requires_grad=True)
out = (w.exp() * 2).sum()
gw = torch.autograd.grad(out, w, create_graph=True)[0]
print("double", torch.autograd.grad(gw.sum(), w)[0])
try:  # the second-order call freed the first graph's buffers (exp saves its result)
    torch.autograd.grad(out, w)
except RuntimeError as e:
    print("freed:", str(e)[:60])
q = torch.randn(3, requires_grad=True)
print(
    "unused",
    torch.autograd.grad((q * 2).sum(), [q, w], allow_unused=True)[1],
    torch.autograd.grad((q * 2).sum(), [q, w], allow_unused=True, materialize_grads=True)[1],
)
with torch.no_grad():
    print("no_grad", (q * 2).requires_grad, torch.is_grad_enabled())
with torch.enable_grad():
    print("enable", (q * 2).requires_grad)
with torch.inference_mode():
    r = q * 2
print("inference", r.requires_grad, r.is_inference())
