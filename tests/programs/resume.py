"""Checkpoint and resume: save model, optimizer, scheduler, scaler and RNG state in one dict,
load them into fresh objects, continue, and check the resumed run matches the uninterrupted one."""
import copy
import io

import torch
import torch.nn as nn
import torch.nn.functional as F

X = torch.Generator().manual_seed(3)
data = torch.randn(64, 6, generator=X)
target = (data @ torch.randn(6, 1, generator=X)).squeeze(1) + 0.1 * torch.randn(64, generator=X)


def make(kind):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(0.1), nn.Linear(16, 1))
    if kind == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, amsgrad=True, weight_decay=1e-4)
    elif kind == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9, dampening=0.1)
    elif kind == "rmsprop":
        opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, centered=True, momentum=0.5)
    elif kind == "nadam":
        opt = torch.optim.NAdam(model.parameters(), lr=1e-2)
    elif kind == "radam":
        opt = torch.optim.RAdam(model.parameters(), lr=1e-2, decoupled_weight_decay=True,
                                weight_decay=0.01)
    else:
        opt = torch.optim.Adamax(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[3, 6], gamma=0.3)
    return model, opt, sched


def epoch(model, opt, sched):
    model.train()
    perm = torch.randperm(64)
    tot = 0.0
    for i in range(0, 64, 16):
        idx = perm[i:i + 16]
        opt.zero_grad()
        loss = F.mse_loss(model(data[idx]).squeeze(-1), target[idx])
        loss.backward()
        opt.step()
        tot += loss.item()
    sched.step()
    return tot / 4


for kind in ["adam", "sgd", "rmsprop", "nadam", "radam", "adamax"]:
    model, opt, sched = make(kind)
    full = [epoch(model, opt, sched) for _ in range(8)]
    model, opt, sched = make(kind)
    part = [epoch(model, opt, sched) for _ in range(4)]
    ckpt = {"epoch": 4, "model": model.state_dict(), "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(), "rng": torch.get_rng_state()}
    buf = io.BytesIO()
    torch.save(ckpt, buf)
    buf.seek(0)
    del model, opt, sched
    ck = torch.load(buf, weights_only=True)
    model, opt, sched = make(kind)
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    sched.load_state_dict(ck["scheduler"])
    torch.set_rng_state(ck["rng"])
    part += [epoch(model, opt, sched) for _ in range(ck["epoch"], 8)]
    print(kind, [round(v, 5) for v in full[-3:]], part == full, sched.get_last_lr(),
          sched.last_epoch)
    sd = opt.state_dict()
    first = sd["state"][0]
    print("  state keys", sorted(first), sorted(k for k in sd["param_groups"][0] if k != "params"))
    if "step" in first:
        print("  step", first["step"], first["step"].dtype)

# moving the checkpointed state into a model wrapped differently (prefix stripping)
model, opt, sched = make("adam")
wrapped = nn.ModuleDict({"module": model})
state = {k.replace("module.", ""): v for k, v in wrapped.state_dict().items()}
fresh = make("sgd")[0]
print(fresh.load_state_dict(state))
copy_model = copy.deepcopy(model)
print(all(torch.equal(a, b) for a, b in zip(copy_model.parameters(), model.parameters())),
      copy_model[0].weight is model[0].weight)
