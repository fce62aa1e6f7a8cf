"""Optimizer features from fine-tuning scripts: per-layer learning rates, add_param_group when
unfreezing, LambdaLR warmup, CosineAnnealingWarmRestarts with fractional epochs,
ReduceLROnPlateau in max mode with cooldown, gradient accumulation, clip_grad_value_,
EMA of weights by hand, SWA with AveragedModel/SWALR, and less common optimizers."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
X = torch.randn(48, 6)
Y = (X[:, 0] * X[:, 1] > 0).long()

backbone = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU())
head = nn.Linear(16, 2)
model = nn.Sequential(backbone, head)
for p in backbone.parameters():
    p.requires_grad_(False)
opt = torch.optim.SGD([{"params": head.parameters(), "lr": 0.1}], lr=0.01, momentum=0.9,
                      weight_decay=5e-4)
warmup = 3
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: min(1.0, (e + 1) / warmup))
ema = copy.deepcopy(model)
for p in ema.parameters():
    p.requires_grad_(False)


@torch.no_grad()
def ema_update(decay=0.9):
    for pe, pm in zip(ema.parameters(), model.parameters()):
        pe.mul_(decay).add_(pm.detach(), alpha=1 - decay)
    for be, bm in zip(ema.buffers(), model.buffers()):
        be.copy_(bm)


accum = 3
for epoch in range(6):
    if epoch == 2:
        for p in backbone.parameters():
            p.requires_grad_(True)
        opt.add_param_group({"params": backbone.parameters(), "lr": 0.01, "momentum": 0.5})
        sched.base_lrs.append(0.01)
        sched.lr_lambdas.append(sched.lr_lambdas[0])
    perm = torch.randperm(48)
    opt.zero_grad()
    for i, s in enumerate(range(0, 48, 8)):
        idx = perm[s:s + 8]
        loss = F.cross_entropy(model(X[idx]), Y[idx]) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
            opt.step()
            opt.zero_grad(set_to_none=True)
            ema_update()
    sched.step()
    with torch.no_grad():
        acc = (model(X).argmax(1) == Y).float().mean().item()
        ema_acc = (ema(X).argmax(1) == Y).float().mean().item()
    print(epoch, [round(g["lr"], 5) for g in opt.param_groups], round(loss.item() * accum, 5),
          round(acc, 4), round(ema_acc, 4), len(opt.param_groups))
print([sorted(k for k in g if k != "params") == sorted(opt.param_groups[0]) for g in
       opt.param_groups], opt.param_groups[1]["momentum"], opt.param_groups[1]["weight_decay"])
print(len(opt.state), [p.grad is None for p in backbone.parameters()])

# warm restarts stepped with fractional epochs, as the docs show
w = nn.Parameter(torch.zeros(2))
o = torch.optim.Adam([w], lr=0.1)
cawr = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.001)
iters = 4
lrs = []
for epoch in range(5):
    for i in range(iters):
        o.step()
        cawr.step(epoch + i / iters)
        lrs.append(round(o.param_groups[0]["lr"], 5))
print(lrs[::3], cawr.T_cur, cawr.T_i)

# plateau on validation accuracy
o = torch.optim.SGD([w], lr=1.0)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(o, mode="max", factor=0.5, patience=1,
                                                     threshold=0.01, cooldown=1, min_lr=0.1)
for metric in [0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.61, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7]:
    plateau.step(metric)
    print(o.param_groups[0]["lr"], end=" ")
print(plateau.num_bad_epochs, plateau.best, plateau.get_last_lr())

# one-cycle and cyclic by iterations, with momentum cycling
o = torch.optim.SGD([w], lr=0.1, momentum=0.9)
oc = torch.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, epochs=2, steps_per_epoch=5,
                                         pct_start=0.3, anneal_strategy="linear",
                                         div_factor=10, final_div_factor=100)
hist = []
for _ in range(10):
    o.step()
    oc.step()
    hist.append((round(o.param_groups[0]["lr"], 4), round(o.param_groups[0]["momentum"], 4)))
print(hist)
o = torch.optim.Adam([w], lr=0.1)
cyc = torch.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                        mode="exp_range", gamma=0.9, cycle_momentum=False)
vals = []
for _ in range(8):
    o.step()
    cyc.step()
    vals.append(round(cyc.get_last_lr()[0], 5))
print(vals)

# SWA in the last epochs
model2 = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
o = torch.optim.SGD(model2.parameters(), lr=0.05)
swa_model = torch.optim.swa_utils.AveragedModel(model2)
swa_sched = torch.optim.swa_utils.SWALR(o, swa_lr=0.02, anneal_epochs=2, anneal_strategy="cos")
loader = [(X[i:i + 12], Y[i:i + 12]) for i in range(0, 48, 12)]
for epoch in range(5):
    for xb, yb in loader:
        o.zero_grad()
        F.cross_entropy(model2(xb), yb).backward()
        o.step()
    if epoch >= 2:
        swa_model.update_parameters(model2)
        swa_sched.step()
    print("swa", epoch, round(o.param_groups[0]["lr"], 5), swa_model.n_averaged.item())
torch.optim.swa_utils.update_bn(loader, swa_model)
print(swa_model.module[1].running_mean[:3].tolist(), swa_model.module[1].num_batches_tracked.item())
with torch.no_grad():
    print("swa acc", (swa_model(X).argmax(1) == Y).float().mean().item())

# less common optimizers, a few steps each on a quadratic
for name, make in [("Adadelta", lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.9)),
                   ("Adagrad", lambda p: torch.optim.Adagrad(p, lr=0.5, lr_decay=0.01,
                                                             initial_accumulator_value=0.1)),
                   ("ASGD", lambda p: torch.optim.ASGD(p, lr=0.1, t0=2)),
                   ("Rprop", lambda p: torch.optim.Rprop(p, lr=0.05, etas=(0.4, 1.3))),
                   ("NAdam", lambda p: torch.optim.NAdam(p, lr=0.1, decoupled_weight_decay=True,
                                                         weight_decay=0.1)),
                   ("Adam max", lambda p: torch.optim.Adam(p, lr=0.1, maximize=True)),
                   ("AdamW amsgrad", lambda p: torch.optim.AdamW(p, lr=0.1, amsgrad=True)),
                   ("SGD nesterov", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9,
                                                              nesterov=True))]:
    p = nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    o = make([p])
    for _ in range(5):
        o.zero_grad()
        f = ((p - torch.tensor([0.5, 0.5, 0.5])) ** 2).sum()
        (-f if "max" in name else f).backward()
        o.step()
    print(f"{name:14s}", [round(v, 5) for v in p.tolist()], sorted(o.state[p]))
