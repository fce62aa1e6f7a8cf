"""A physics-informed network for u'' = -pi^2 sin(pi x): second derivatives by autograd.grad."""

import math
import torch
from torch.func import grad, vmap

torch.manual_seed(12)
torch.set_default_dtype(torch.float64)
net = torch.nn.Sequential(
    torch.nn.Linear(1, 20),
    torch.nn.Tanh(),
    torch.nn.Linear(20, 20),
    torch.nn.Tanh(),
    torch.nn.Linear(20, 1),
)
opt = torch.optim.Adam(net.parameters(), lr=5e-3)
xb = torch.tensor([[0.0], [1.0]])
for it in range(60):
    x = torch.rand(32, 1, requires_grad=True)
    u = net(x)
    du = torch.autograd.grad(u.sum(), x, create_graph=True)[0]
    d2u = torch.autograd.grad(du.sum(), x, create_graph=True)[0]
    residual = d2u + math.pi**2 * torch.sin(math.pi * x)
    loss = residual.pow(2).mean() + 10 * net(xb).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 20 == 0:
        print(it, round(loss.item(), 6))
xs = torch.linspace(0, 1, 5).unsqueeze(1)
print(net(xs).squeeze().detach(), torch.sin(math.pi * xs).squeeze())
J = torch.autograd.functional.jacobian(lambda v: net(v).squeeze(1), xs)
H = torch.autograd.functional.hessian(lambda v: net(v.view(1, 1)).sum(), torch.tensor([0.3]))
print(J.shape, H)

f = lambda v: net(v.view(1, 1)).squeeze()
print(vmap(grad(grad(f)))(xs.squeeze(1)))
