"""Classic optimisation benchmarks: the Rosenbrock function minimised by LBFGS (strong Wolfe
line search, history size, tolerance stopping), Newton's method with autograd Hessians,
gradient descent with momentum/Nesterov, Adam/AdamW/RMSprop/Adagrad/Rprop and a constrained
problem by projected gradients; function-evaluation counts and optimizer state inspected."""

import torch


def rosen(x):
    return ((1 - x[:-1]) ** 2 + 100 * (x[1:] - x[:-1] ** 2) ** 2).sum()


torch.set_default_dtype(torch.float64)
def run_lbfgs(hist, ls):
    x = torch.tensor([-1.2, 1.0, -0.5, 0.8], requires_grad=True)
    opt = torch.optim.LBFGS(
        [x],
        lr=1 if ls else 0.2,
        max_iter=200,
        history_size=hist,
        line_search_fn=ls,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
    )
    evals = []

    def closure():
        opt.zero_grad()
        f = rosen(x)
        f.backward()
        evals.append(f.item())
        return f

    opt.step(closure)
    return x, len(evals), opt.state[x]["n_iter"]


for hist, ls in [(10, "strong_wolfe"), (3, "strong_wolfe"), (10, None)]:
    x, n_evals, n_iter = run_lbfgs(hist, ls)
    print(
        "lbfgs",
        hist,
        ls,
        n_evals,
        n_iter,
        f"{rosen(x).item():.3e}" if ls else "-",
        x.detach().round(decimals=5) if ls else "",
    )

x = torch.tensor([-1.2, 1.0])
for _ in range(12):
    g = torch.autograd.functional.jacobian(rosen, x)
    H = torch.autograd.functional.hessian(rosen, x)
    x = x - torch.linalg.solve(H, g)
print("newton", x, f"{rosen(x).item():.3e}", torch.linalg.eigvalsh(H))

results = {}
for name, make in [
    ("sgd", lambda p: torch.optim.SGD(p, lr=1e-3)),
    ("momentum", lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9)),
    (
        "nesterov",
        lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9, nesterov=True, weight_decay=1e-4),
    ),
    ("adam", lambda p: torch.optim.Adam(p, lr=0.02)),
    ("amsgrad", lambda p: torch.optim.Adam(p, lr=0.02, amsgrad=True)),
    ("adamw", lambda p: torch.optim.AdamW(p, lr=0.02, weight_decay=0.1)),
    ("nadam", lambda p: torch.optim.NAdam(p, lr=0.02)),
    ("radam", lambda p: torch.optim.RAdam(p, lr=0.005)),
    ("adamax", lambda p: torch.optim.Adamax(p, lr=0.05)),
    ("rmsprop", lambda p: torch.optim.RMSprop(p, lr=1e-3, momentum=0.5, centered=True)),
    ("adagrad", lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=1e-3)),
    ("adadelta", lambda p: torch.optim.Adadelta(p, lr=1.0)),
    ("rprop", lambda p: torch.optim.Rprop(p, lr=1e-3)),
    ("asgd", lambda p: torch.optim.ASGD(p, lr=1e-3)),
]:
    x = torch.tensor([-1.2, 1.0], requires_grad=True)
    opt = make([x])
    for _ in range(60):
        opt.zero_grad()
        f = rosen(x)
        f.backward()
        opt.step()
    results[name] = (rosen(x).item(), x.detach().clone())
    print(f"{name:9s} f={results[name][0]:.6f} x={results[name][1].tolist()}")
print("best", min(results, key=lambda k: results[k][0]))
print(
    "state keys",
    sorted(torch.optim.Adam([torch.zeros(1, requires_grad=True)]).state_dict()["param_groups"][0]),
)

# minimise over the unit disk by projected gradient descent with a step-size schedule
x = torch.tensor([0.0, 0.0], requires_grad=True)
opt = torch.optim.SGD([x], lr=2e-3, momentum=0.5)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=50, gamma=0.5)
for _ in range(150):
    opt.zero_grad()
    rosen(x).backward()
    opt.step()
    sched.step()
    with torch.no_grad():
        nrm = x.norm()
        if nrm > 1:
            x.div_(nrm)
print("projected", x.detach(), round(x.norm().item(), 6), sched.get_last_lr())
