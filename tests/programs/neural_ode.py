"""A neural ODE fit to a spiral (hand-written RK4, loss through the solver, adjoint-free
backprop), a Lotka-Volterra parameter fit with sensitivities by forward-mode AD, and an
implicit (backward Euler) step solved by Newton's method with autograd Jacobians."""

import torch
import torch.nn as nn
from torch.func import jacfwd, jvp, vmap

torch.manual_seed(3)


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))

    def forward(self, t, y):
        return self.net(y)


def rk4(f, y0, ts):
    ys = [y0]
    y = y0
    for t0, t1 in zip(ts[:-1], ts[1:]):
        h = t1 - t0
        k1 = f(t0, y)
        k2 = f(t0 + h / 2, y + h / 2 * k1)
        k3 = f(t0 + h / 2, y + h / 2 * k2)
        k4 = f(t1, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return torch.stack(ys)


A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])
ts = torch.linspace(0, 2, 21)
true_y = rk4(lambda t, y: y @ A.T, torch.tensor([[2.0, 0.0]]), ts)
print("true", true_y.shape, true_y[-1])
func = ODEFunc()
opt = torch.optim.RMSprop(func.parameters(), lr=1e-2)
for itr in range(12):
    opt.zero_grad()
    idx = torch.randint(0, 16, (3,))
    y0 = true_y[idx]
    batch_t = ts[:6]
    pred = torch.stack([rk4(func, y0[i], batch_t) for i in range(3)], 1)
    target = torch.stack([true_y[idx + k] for k in range(6)])
    loss = (pred - target).abs().mean()
    loss.backward()
    opt.step()
    if itr % 4 == 0:
        print("itr", itr, round(loss.item(), 5))
with torch.no_grad():
    full = rk4(func, true_y[0], ts)
print("fit", round((full - true_y).abs().mean().item(), 4))
gn = torch.nn.utils.clip_grad_norm_(func.parameters(), 1.0)
print("grad norm", round(gn.item(), 5))

torch.set_default_dtype(torch.float64)


def lotka(theta, y):
    a, b, c, d = theta
    return torch.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])


def solve(theta, y0, n=20, h=0.2):
    return rk4(lambda t, y: lotka(theta, y), y0, torch.arange(n + 1) * h)


theta_true = torch.tensor([1.0, 0.4, 0.8, 0.2])
y0 = torch.tensor([3.0, 2.0])
data = solve(theta_true, y0) + 0.05 * torch.randn(21, 2)
theta = torch.tensor([0.8, 0.5, 0.9, 0.3], requires_grad=True)
opt = torch.optim.LBFGS([theta], lr=1, max_iter=10, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    err = ((solve(theta, y0) - data) ** 2).mean()
    err.backward()
    return err


final = opt.step(closure)
print("lotka", theta.detach(), f"{final.item():.6f}")
sens = jacfwd(lambda th: solve(th, y0)[-1])(theta.detach())
print("sensitivity", sens)
_, tangent = jvp(
    lambda th: solve(th, y0, n=10)[-1], (theta.detach(),), (torch.tensor([1.0, 0, 0, 0]),)
)
print(
    "jvp",
    tangent,
    torch.allclose(tangent, jacfwd(lambda th: solve(th, y0, n=10)[-1])(theta.detach())[:, 0]),
)


def implicit_euler_step(f, y, h, iters=6):
    z = y.clone()
    for _ in range(iters):
        r = z - y - h * f(z)
        J = torch.autograd.functional.jacobian(lambda u: u - y - h * f(u), z)
        z = z - torch.linalg.solve(J, r)
    return z


stiff = torch.tensor([[-50.0, 1.0], [0.0, -0.5]])
y = torch.tensor([1.0, 1.0])
for _ in range(5):
    y = implicit_euler_step(lambda u: stiff @ u + 0.1 * u**3, y, 0.1)
print("implicit", y)
batch = torch.randn(5, 2)
print(
    "vmap rhs",
    vmap(lambda u: lotka(theta_true, u))(batch).shape,
    vmap(jacfwd(lambda u: lotka(theta_true, u)))(batch)[0],
)
