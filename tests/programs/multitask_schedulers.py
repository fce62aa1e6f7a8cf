"""A multi-task network (shared trunk, a classification head and a regression head) trained
with two optimizers on separate parameter groups, per-group learning rates, uncertainty-weighted
losses (learned log-variances), several schedulers (MultiStepLR, ExponentialLR, CyclicLR,
ChainedScheduler, PolynomialLR, OneCycleLR) stepped per epoch or per batch, get_last_lr,
optimizer.state_dict() inspection (param_groups, state keys, step counts), add_param_group, and
saving/loading optimizer + scheduler state to resume."""

import io

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import (ChainedScheduler, CyclicLR, ExponentialLR, MultiStepLR,
                                      OneCycleLR, PolynomialLR)

torch.manual_seed(12)
X = torch.randn(96, 6)
y_cls = (X[:, 0] + X[:, 1] > 0).long() + (X[:, 2] > 0.5).long()
y_reg = (X[:, 3] * 2 - X[:, 4]).unsqueeze(1) + 0.05 * torch.randn(96, 1)


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 24), nn.ReLU())
        self.cls_head = nn.Linear(24, 3)
        self.reg_head = nn.Sequential(nn.Linear(24, 8), nn.Tanh(), nn.Linear(8, 1))
        self.log_vars = nn.Parameter(torch.zeros(2))

    def forward(self, x):
        h = self.trunk(x)
        return self.cls_head(h), self.reg_head(h)


model = MultiTask()
opt_main = torch.optim.SGD([
    {"params": model.trunk.parameters()},
    {"params": model.cls_head.parameters(), "lr": 0.05},
], lr=0.02, momentum=0.9, nesterov=True, weight_decay=1e-4)
opt_reg = torch.optim.Adam(model.reg_head.parameters(), lr=5e-3, betas=(0.9, 0.99))
opt_reg.add_param_group({"params": [model.log_vars], "lr": 1e-2, "weight_decay": 0.0})
print([len(g["params"]) for g in opt_main.param_groups],
      [len(g["params"]) for g in opt_reg.param_groups],
      [g["lr"] for g in opt_reg.param_groups])

sched_main = ChainedScheduler([
    MultiStepLR(opt_main, milestones=[3, 5], gamma=0.5),
    ExponentialLR(opt_main, gamma=0.95),
])
sched_reg = PolynomialLR(opt_reg, total_iters=6, power=2.0)
print([round(v, 6) for v in sched_main.get_last_lr()], sched_reg.get_last_lr())
for epoch in range(7):
    model.train()
    perm = torch.randperm(96)
    for i in range(0, 96, 32):
        idx = perm[i:i + 32]
        logits, pred = model(X[idx])
        l_cls = F.cross_entropy(logits, y_cls[idx])
        l_reg = F.mse_loss(pred, y_reg[idx])
        s = model.log_vars
        loss = torch.exp(-s[0]) * l_cls + s[0] + 0.5 * torch.exp(-s[1]) * l_reg + 0.5 * s[1]
        opt_main.zero_grad()
        opt_reg.zero_grad()
        loss.backward()
        opt_main.step()
        opt_reg.step()
    sched_main.step()
    sched_reg.step()
    print(epoch, f"{l_cls.item():.5f}", f"{l_reg.item():.5f}",
          [round(v, 6) for v in sched_main.get_last_lr()],
          [round(v, 7) for v in sched_reg.get_last_lr()],
          [round(v, 4) for v in model.log_vars.tolist()])

sd = opt_main.state_dict()
print(sorted(sd.keys()), len(sd["state"]), sorted(sd["state"][0].keys()))
print({k: v for k, v in sd["param_groups"][1].items() if k != "params"}.keys())
print(sd["param_groups"][0]["params"], sd["param_groups"][1]["params"],
      round(sd["param_groups"][1]["lr"], 6), sd["param_groups"][1]["initial_lr"])
sr = opt_reg.state_dict()
print(sorted(sr["state"].keys()), sorted(sr["state"][4].keys()), sr["state"][4]["step"].item(),
      sr["state"][4]["exp_avg"].shape, sr["param_groups"][1]["params"])
print(sorted(sched_main.state_dict().keys()), sched_reg.state_dict()["last_epoch"])

# per-batch schedulers: CyclicLR on SGD with momentum cycling, OneCycleLR on AdamW
opt_c = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
cyc = CyclicLR(opt_c, base_lr=0.001, max_lr=0.01, step_size_up=4, mode="triangular2",
               cycle_momentum=True, base_momentum=0.8, max_momentum=0.9)
opt_o = torch.optim.AdamW(model.parameters(), lr=0.1)
one = OneCycleLR(opt_o, max_lr=0.01, total_steps=12, pct_start=0.25, anneal_strategy="cos")
lrs, moms, one_lrs, betas = [], [], [], []
for _ in range(12):
    opt_c.step()
    cyc.step()
    opt_o.step()
    one.step()
    lrs.append(round(cyc.get_last_lr()[0], 6))
    moms.append(round(opt_c.param_groups[0]["momentum"], 4))
    one_lrs.append(round(one.get_last_lr()[0], 7))
    betas.append(round(opt_o.param_groups[0]["betas"][0], 4))
print(lrs)
print(moms)
print(one_lrs)
print(betas)

# resume: save and restore both optimizers and schedulers
buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt_main": opt_main.state_dict(),
            "opt_reg": opt_reg.state_dict(), "sched_main": sched_main.state_dict(),
            "sched_reg": sched_reg.state_dict(), "epoch": 7}, buf)
buf.seek(0)
ck = torch.load(buf, weights_only=True)
model2 = MultiTask()
model2.load_state_dict(ck["model"])
opt_main2 = torch.optim.SGD([
    {"params": model2.trunk.parameters()},
    {"params": model2.cls_head.parameters(), "lr": 0.05},
], lr=0.02, momentum=0.9, nesterov=True, weight_decay=1e-4)
opt_main2.load_state_dict(ck["opt_main"])
sched2 = ChainedScheduler([MultiStepLR(opt_main2, milestones=[3, 5], gamma=0.5),
                           ExponentialLR(opt_main2, gamma=0.95)])
sched2.load_state_dict(ck["sched_main"])
print(ck["epoch"], [round(g["lr"], 6) for g in opt_main2.param_groups],
      [round(v, 6) for v in sched2.get_last_lr()],
      torch.equal(opt_main2.state_dict()["state"][0]["momentum_buffer"],
                  sd["state"][0]["momentum_buffer"]))
