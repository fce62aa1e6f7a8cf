"""Epidemiology model fitting as a scientist writes it: an SIR/SEIR model integrated with an
adaptive Runge-Kutta-Fehlberg (RK45) solver written by hand (error control with norms and
Python control flow on tensors), parameters fitted by Levenberg-Marquardt with Jacobians from
torch.func.jacfwd and autograd.functional.jacobian(vectorize=True), confidence intervals from
the Gauss-Newton covariance, and a profile likelihood scan."""

import torch
from torch.autograd.functional import jacobian
from torch.func import jacfwd

torch.manual_seed(5)
torch.set_default_dtype(torch.float64)


def sir(t, y, beta, gamma):
    S, Inf, R = y.unbind(-1)
    N = S + Inf + R
    new_cases = beta * S * Inf / N
    return torch.stack([-new_cases, new_cases - gamma * Inf, gamma * Inf], -1)


A = [[], [1 / 4], [3 / 32, 9 / 32], [1932 / 2197, -7200 / 2197, 7296 / 2197],
     [439 / 216, -8, 3680 / 513, -845 / 4104], [-8 / 27, 2, -3544 / 2565, 1859 / 4104, -11 / 40]]
C = [0, 1 / 4, 3 / 8, 12 / 13, 1, 1 / 2]
B4 = [25 / 216, 0, 1408 / 2565, 2197 / 4104, -1 / 5, 0]
B5 = [16 / 135, 0, 6656 / 12825, 28561 / 56430, -9 / 50, 2 / 55]


def rkf45(f, y0, t_eval, rtol=1e-6, atol=1e-8, h0=0.1):
    t, y, h = t_eval[0].item(), y0, h0
    out, steps, rejected = [y0], 0, 0
    for t_next in t_eval[1:].tolist():
        while t < t_next - 1e-12:
            h = min(h, t_next - t)
            k = []
            for i in range(6):
                yi = y + h * sum(a * kj for a, kj in zip(A[i], k)) if i else y
                k.append(f(t + C[i] * h, yi))
            y4 = y + h * sum(b * kj for b, kj in zip(B4, k) if b)
            y5 = y + h * sum(b * kj for b, kj in zip(B5, k) if b)
            scale = atol + rtol * torch.maximum(y.abs(), y5.abs())
            err = torch.linalg.vector_norm((y5 - y4) / scale) / y.numel() ** 0.5
            if err.item() <= 1.0:
                t, y = t + h, y5
                steps += 1
            else:
                rejected += 1
            h = h * min(5.0, max(0.2, 0.9 * err.item() ** -0.2)) if err.item() > 0 else 5 * h
        out.append(y)
    return torch.stack(out), steps, rejected


t_obs = torch.linspace(0, 60, 7)
y0 = torch.tensor([990.0, 10.0, 0.0])
true = torch.tensor([0.35, 0.1])
traj, steps, rej = rkf45(lambda t, y: sir(t, y, *true), y0, t_obs)
print("rkf45 steps", steps, "rejected", rej, "peak I", traj[:, 1].max().item())
obs = traj[:, 1] * torch.exp(0.05 * torch.randn(7))


def residuals(theta):
    beta, gamma = theta.exp().unbind()
    sol, _, _ = rkf45(lambda t, y: sir(t, y, beta, gamma), y0, t_obs, rtol=1e-4, atol=1e-6)
    return torch.log(sol[:, 1]) - torch.log(obs)


theta = torch.log(torch.tensor([0.5, 0.2]))
lam = 1e-2
for it in range(4):
    r = residuals(theta)
    J = jacfwd(residuals)(theta)
    g = J.T @ r
    H = J.T @ J
    step = torch.linalg.solve(H + lam * torch.diag(torch.diagonal(H)), -g)
    new = theta + step
    if residuals(new).pow(2).sum() < r.pow(2).sum():
        theta, lam = new, lam / 3
    else:
        lam = lam * 4
    print(f"lm {it} sse {r.pow(2).sum().item():.8f} beta {theta[0].exp().item():.6f} "
          f"gamma {theta[1].exp().item():.6f}")

J2 = jacobian(residuals, theta, vectorize=True)
print("jacobian", J2.shape, J2[::3])
r = residuals(theta)
sigma2 = r.pow(2).sum() / (len(r) - 2)
cov = sigma2 * torch.linalg.inv(J2.T @ J2)
se = cov.diagonal().sqrt()
ci = torch.stack([theta - 1.96 * se, theta + 1.96 * se]).exp()
print("R0", (theta[0] - theta[1]).exp().item(), "95% CI beta", ci[:, 0], "gamma", ci[:, 1])

# profile likelihood over gamma with beta re-optimized by Newton steps on one parameter
prof = []
for lg in torch.linspace(theta[1].item() - 0.2, theta[1].item() + 0.2, 3):
    b = theta[0].clone()
    for _ in range(1):
        f = lambda bb, lg=lg: residuals(torch.stack([bb, lg])).pow(2).sum()
        gb = torch.func.grad(f)(b)
        hb = torch.func.grad(torch.func.grad(f))(b)
        b = b - gb / hb
    prof.append(f(b).item())
print("profile sse", [round(p, 6) for p in prof])


# SEIR with a time-varying contact rate (lockdown): sensitivities of the final size
def seir(t, y, beta0, drop):
    S, E, Inf, R = y.unbind(-1)
    beta = beta0 * (1 - drop * torch.sigmoid(torch.tensor(t - 20.0)))
    N = S + E + Inf + R
    return torch.stack([-beta * S * Inf / N, beta * S * Inf / N - 0.2 * E, 0.2 * E - 0.1 * Inf,
                        0.1 * Inf], -1)


def final_size(drop):
    sol, _, _ = rkf45(lambda t, y: seir(t, y, torch.tensor(0.4), drop),
                      torch.tensor([990.0, 0.0, 10.0, 0.0]), torch.linspace(0, 80, 2),
                      rtol=1e-4, atol=1e-6)
    return sol[-1, 3]


drops = torch.tensor([0.0, 0.3, 0.6], requires_grad=True)
sizes = torch.stack([final_size(d) for d in drops])
sizes.sum().backward()
print("final sizes", sizes.detach(), "d size / d drop", drops.grad)
