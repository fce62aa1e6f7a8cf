"""Fit the parameters of a damped oscillator ODE (RK4 integrator) with LBFGS, in float64."""
import torch

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)


def rk4(f, y0, t):
    ys = [y0]
    y = y0
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return torch.stack(ys)


def oscillator(params):
    omega, zeta = params[0], params[1]
    A = torch.stack([torch.stack([torch.zeros(()), torch.ones(())]),
                     torch.stack([-omega ** 2, -2 * zeta * omega])])
    return lambda y: A @ y


t = torch.linspace(0, 6, 61)
y0 = torch.tensor([1.0, 0.0])
true = torch.tensor([2.0, 0.15])
with torch.no_grad():
    obs = rk4(oscillator(true), y0, t)[:, 0] + 0.01 * torch.randn(61)

params = torch.tensor([1.5, 0.3], requires_grad=True)
opt = torch.optim.LBFGS([params], lr=1, max_iter=40, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = ((rk4(oscillator(params), y0, t)[:, 0] - obs) ** 2).mean()
    loss.backward()
    return loss


for it in range(3):
    loss = opt.step(closure)
    print(f"outer {it}: loss {loss.item():.10f} params {params.detach().numpy().round(6).tolist()}")
print("final", [round(v, 5) for v in params.tolist()])
print("n_iter", opt.state[opt._params[0]]["n_iter"])
torch.set_default_dtype(torch.float32)
