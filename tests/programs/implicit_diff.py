"""Implicit differentiation as in the "Deep Implicit Layers" tutorial and bilevel-optimization
papers: a Newton root finder wrapped in a custom autograd.Function whose backward solves the
adjoint system with autograd.functional.jacobian, a fixed-point (DEQ-style) layer with a
backward hook, gradients checked by gradcheck and finite differences, hyperparameter gradients
of ridge regression through the optimality condition, and vjp/jvp/hvp of the solution map."""

import torch
from torch.autograd.functional import hessian, hvp, jacobian, jvp, vjp

torch.manual_seed(6)
torch.set_default_dtype(torch.float64)


def F(x, theta):
    """Residual of a nonlinear system with parameters theta: F(x*, theta) = 0."""
    A = theta[:9].view(3, 3)
    b = theta[9:]
    return torch.tanh(A @ x) + x - b


def newton(theta, iters=10):
    x = torch.zeros(3)
    for _ in range(iters):
        J = jacobian(lambda z: F(z, theta), x)
        x = x - torch.linalg.solve(J, F(x, theta))
    return x


class RootFind(torch.autograd.Function):
    @staticmethod
    def forward(ctx, theta):
        with torch.no_grad():
            x = newton(theta)
        ctx.save_for_backward(theta, x)
        return x

    @staticmethod
    def backward(ctx, grad_x):
        theta, x = ctx.saved_tensors
        with torch.enable_grad():
            Jx = jacobian(lambda z: F(z, theta), x)
            Jt = jacobian(lambda t: F(x, t), theta)
        lam = torch.linalg.solve(Jx.T, grad_x)
        return -Jt.T @ lam


theta = torch.cat([0.2 * torch.randn(9), torch.randn(3)]).requires_grad_(True)
x_star = RootFind.apply(theta)
print("root", x_star, F(x_star, theta).abs().max().item() < 1e-12)
loss = (x_star ** 2).sum()
(g,) = torch.autograd.grad(loss, theta)
print("implicit grad", g[:4], g[-3:])
print("gradcheck", torch.autograd.gradcheck(RootFind.apply, (theta,), eps=1e-6, atol=1e-5))
unrolled = newton(theta)
(g_unrolled,) = torch.autograd.grad((unrolled ** 2).sum(), theta)
print("matches unrolled", torch.allclose(g, g_unrolled, atol=1e-8))
print("jacobian of solution map", jacobian(RootFind.apply, theta.detach()).shape)
out, vj = vjp(RootFind.apply, theta.detach(), torch.ones(3))
_, jv = jvp(lambda t: newton(t), theta.detach(), torch.ones(12))
print("vjp/jvp", vj[:3], jv)

# DEQ-style fixed point z = tanh(W z + U x) with implicit backward through a hook
W = (0.3 * torch.randn(4, 4) / 2).requires_grad_(True)
U = torch.randn(4, 2).requires_grad_(True)
xin = torch.randn(5, 2)


def f(z):
    return torch.tanh(z @ W.T + xin @ U.T)


with torch.no_grad():
    z = torch.zeros(5, 4)
    iters = 0
    while iters < 200:
        z_next = f(z)
        iters += 1
        if (z_next - z).abs().max() < 1e-12:
            break
        z = z_next
print("fixed point iterations", iters, (f(z) - z).abs().max().item() < 1e-11)
z = f(z.requires_grad_())           # one step re-engages autograd
z0 = z.clone().detach().requires_grad_()
f0 = f(z0)


def backward_hook(grad):
    gz = grad
    for _ in range(200):
        gz_next = torch.autograd.grad(f0, z0, gz, retain_graph=True)[0] + grad
        if (gz_next - gz).abs().max() < 1e-12:
            break
        gz = gz_next
    return gz_next


z.register_hook(backward_hook)
target = torch.randn(5, 4)
((z - target) ** 2).sum().backward()
print("deq grads", W.grad.norm().item(), U.grad[0])

# ridge regression: d(validation loss)/d(log lambda) through the normal equations
Xtr, Xva = torch.randn(30, 5), torch.randn(20, 5)
w_true = torch.randn(5)
ytr = Xtr @ w_true + 0.5 * torch.randn(30)
yva = Xva @ w_true + 0.5 * torch.randn(20)
log_lam = torch.tensor(0.0, requires_grad=True)
opt = torch.optim.SGD([log_lam], lr=0.1)
for _ in range(30):
    w = torch.linalg.solve(Xtr.T @ Xtr + log_lam.exp() * torch.eye(5), Xtr.T @ ytr)
    val = ((Xva @ w - yva) ** 2).mean()
    opt.zero_grad()
    val.backward()
    opt.step()
print("ridge", round(log_lam.item(), 6), round(val.item(), 6))
H = hessian(lambda ll: ((Xva @ torch.linalg.solve(Xtr.T @ Xtr + ll.exp() * torch.eye(5),
                                                  Xtr.T @ ytr) - yva) ** 2).mean(),
            log_lam.detach())
print("hessian", H, hvp(lambda t: (t ** 3).sum(), torch.ones(2), torch.ones(2))[1])
print("second order", torch.autograd.gradgradcheck(lambda t: RootFind.apply(t).sum() * 0 +
                                                   (t ** 3).sum(), (theta,)))
