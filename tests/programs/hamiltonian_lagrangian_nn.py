"""Hamiltonian and Lagrangian neural networks for a pendulum (Greydanus et al. 2019, Cranmer et
al. 2020 style): the vector field from autograd.grad(create_graph=True) of a learned H, a
leapfrog rollout, and the Euler-Lagrange acceleration from torch.func.hessian/jacrev of L."""

import torch
import torch.nn as nn
from torch.func import hessian, jacrev, vmap

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)


def true_dynamics(x):
    q, p = x[..., 0], x[..., 1]
    return torch.stack([p, -torch.sin(q)], dim=-1)


# training data: random states on the phase plane and their time derivatives (+ noise)
x = torch.empty(128, 2).uniform_(-2.0, 2.0)
dxdt = true_dynamics(x) + 0.01 * torch.randn_like(x)


class HNN(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                                 nn.Tanh(), nn.Linear(hidden, 1))
        self.register_buffer("J", torch.tensor([[0.0, 1.0], [-1.0, 0.0]]))

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def time_derivative(self, x):
        if not x.requires_grad:
            x = x.clone().requires_grad_(True)
        H = self(x)
        dH = torch.autograd.grad(H.sum(), x, create_graph=True)[0]
        return dH @ self.J.T


hnn = HNN()
opt = torch.optim.Adam(hnn.parameters(), lr=1e-2, weight_decay=1e-5)
for step in range(150):
    opt.zero_grad()
    loss = (hnn.time_derivative(x) - dxdt).pow(2).mean()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 149:
        print(f"hnn step {step:3d} loss {loss.item():.6f}")


def leapfrog(dfn, x0, h, n):
    q, p = x0[..., :1], x0[..., 1:]
    traj = [x0]
    for _ in range(n):
        p = p + 0.5 * h * dfn(torch.cat([q, p], -1))[..., 1:]
        q = q + h * dfn(torch.cat([q, p], -1))[..., :1]
        p = p + 0.5 * h * dfn(torch.cat([q, p], -1))[..., 1:]
        traj.append(torch.cat([q, p], -1))
    return torch.stack(traj)


x0 = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
traj_true = leapfrog(true_dynamics, x0, 0.1, 30)
traj_hnn = leapfrog(lambda s: hnn.time_derivative(s).detach(), x0, 0.1, 30)
energy = lambda s: 0.5 * s[..., 1] ** 2 + 1 - torch.cos(s[..., 0])
print("true energy drift", (energy(traj_true) - energy(x0)).abs().max().item())
print("hnn final state", traj_hnn[-1])
print("hnn energy spread", energy(traj_hnn).std(0))
print("traj error", (traj_hnn - traj_true).norm(dim=-1).mean().item())


# Lagrangian network: qdd = (d2L/dqd2)^-1 (dL/dq - d2L/(dq dqd) qd), one state at a time
class LNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 24), nn.Softplus(), nn.Linear(24, 24),
                                 nn.Softplus(), nn.Linear(24, 1))

    def lagrangian(self, state):
        return self.net(state).squeeze(-1)

    def acceleration(self, state):
        H = hessian(self.lagrangian)(state)        # (2, 2)
        g = jacrev(self.lagrangian)(state)          # (2,)
        qd = state[1:]
        return (g[:1] - H[1:, :1] @ qd) / H[1, 1]


lnn = LNN()
qddot = -torch.sin(x[:, :1])
opt = torch.optim.Adam(lnn.parameters(), lr=5e-3)
for step in range(40):
    opt.zero_grad()
    pred = vmap(lnn.acceleration)(x[:64])
    loss = nn.functional.mse_loss(pred, qddot[:64])
    loss.backward()
    nn.utils.clip_grad_norm_(lnn.parameters(), 10.0)
    opt.step()
    if step % 10 == 0 or step == 39:
        print(f"lnn step {step:2d} loss {loss.item():.6f}")

# exact Lagrangian of the pendulum: acceleration must be -sin(q)
L_true = lambda s: 0.5 * s[1] ** 2 + torch.cos(s[0])
H = vmap(hessian(L_true))(x[:3])
print("exact hessians", H)
print("exact accel", vmap(lambda s: jacrev(L_true)(s)[0] / hessian(L_true)(s)[1, 1])(x[:3]))
