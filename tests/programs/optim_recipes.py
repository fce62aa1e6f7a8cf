"""Optimizer recipes from fine-tuning scripts and course notebooks: logistic regression by LBFGS
with strong Wolfe line search (closure, optimizer state), the "no_decay" parameter groups of
transformer fine-tuning (bias and LayerNorm weights without weight decay) with AdamW and a
linear warmup/decay LambdaLR, zero_grad(set_to_none=False), an optimizer + scheduler
checkpoint resumed into fresh objects, SequentialLR(LinearLR, ExponentialLR),
CosineAnnealingWarmRestarts stepped with fractional epochs, ReduceLROnPlateau in abs mode,
SparseAdam for a sparse embedding beside Adam for the dense layers, and SWA/EMA averaging with
AveragedModel(use_buffers=True), get_ema_multi_avg_fn and update_bn."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import (CosineAnnealingWarmRestarts, ExponentialLR, LambdaLR,
                                      LinearLR, ReduceLROnPlateau, SequentialLR)
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)

# ---- logistic regression by LBFGS
N, D = 60, 3
X = torch.randn(N, D)
w_true = torch.tensor([1.5, -2.0, 0.5])
y = (torch.sigmoid(X @ w_true + 0.3) > torch.rand(N)).double()
w = torch.zeros(D, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
opt = torch.optim.LBFGS([w, b], lr=1, max_iter=20, history_size=10,
                        line_search_fn="strong_wolfe", tolerance_grad=1e-9,
                        tolerance_change=1e-12)
calls = 0


def closure():
    global calls
    calls += 1
    opt.zero_grad()
    loss = F.binary_cross_entropy_with_logits(X @ w + b, y) + 1e-3 * w.pow(2).sum()
    loss.backward()
    return loss


for step in range(3):
    loss = opt.step(closure)
    print(f"lbfgs step {step} loss {loss.item():.10f} w {[round(v, 6) for v in w.tolist()]}")
state = opt.state[opt._params[0]]
print("closure calls", calls, "func_evals", state["func_evals"], "n_iter", state["n_iter"])
acc = ((X @ w + b > 0).double() == y).double().mean()
print(f"train accuracy {acc.item():.4f}")


# ---- fine-tuning parameter groups
class TinyEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 8)
        self.proj = nn.Linear(8, 8)
        self.LayerNorm = nn.LayerNorm(8)
        self.classifier = nn.Linear(8, 2)

    def forward(self, ids):
        h = self.LayerNorm(F.gelu(self.proj(self.emb(ids)))).mean(1)
        return self.classifier(h)


model = TinyEncoder()
no_decay = ["bias", "LayerNorm.weight"]
optimizer_grouped_parameters = [
    {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
     "weight_decay": 0.01},
    {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
     "weight_decay": 0.0},
]
print("groups", [len(g["params"]) for g in optimizer_grouped_parameters])
optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=5e-3, eps=1e-8)
num_warmup_steps, num_training_steps = 2, 8


def lr_lambda(current_step: int):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))
    return max(0.0, float(num_training_steps - current_step) /
               float(max(1, num_training_steps - num_warmup_steps)))


scheduler = LambdaLR(optimizer, lr_lambda)
ids = torch.randint(0, 30, (16, 5))
labels = (ids[:, 0] > 15).long()
for step in range(5):
    loss = F.cross_entropy(model(ids), labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=False)
    print(f"ft step {step} loss {loss.item():.8f} lr {scheduler.get_last_lr()[0]:.6f}")
print("grads kept as zeros", all(p.grad is not None and not p.grad.any()
                                 for p in model.parameters()))

# checkpoint and resume into fresh objects
ckpt = {"model": copy.deepcopy(model.state_dict()), "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict()}
print("optimizer state keys", sorted(ckpt["optimizer"]["state"][0].keys()),
      "groups", [(g["lr"], g["weight_decay"], len(g["params"]))
                 for g in ckpt["optimizer"]["param_groups"]])
print("scheduler state", ckpt["scheduler"]["last_epoch"], ckpt["scheduler"]["_step_count"])
model2 = TinyEncoder()
model2.load_state_dict(ckpt["model"])
opt2 = torch.optim.AdamW([{"params": [p for n, p in model2.named_parameters()
                                      if not any(nd in n for nd in no_decay)],
                           "weight_decay": 0.01},
                          {"params": [p for n, p in model2.named_parameters()
                                      if any(nd in n for nd in no_decay)],
                           "weight_decay": 0.0}], lr=5e-3)
sched2 = LambdaLR(opt2, lr_lambda)
opt2.load_state_dict(ckpt["optimizer"])
sched2.load_state_dict(ckpt["scheduler"])
for m, o, s in ((model, optimizer, scheduler), (model2, opt2, sched2)):
    F.cross_entropy(m(ids), labels).backward()
    o.step()
    s.step()
    o.zero_grad()
# the checkpoint holds the live optimizer's state tensors (no deepcopy): opt2 loaded them
# as they are, so both optimizers update the same exp_avg / step tensors and drift apart
print("resumed identically", all(torch.equal(p, q) for p, q in
                                 zip(model.parameters(), model2.parameters())),
      sched2.get_last_lr())

# ---- schedulers stepped per epoch and per iteration
net = nn.Linear(2, 1)
o = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
seq = SequentialLR(o, [LinearLR(o, start_factor=0.25, total_iters=3),
                       ExponentialLR(o, gamma=0.8)], milestones=[3])
lrs = []
for _ in range(7):
    o.step()
    seq.step()
    lrs.append(round(seq.get_last_lr()[0], 6))
print("sequential", lrs)

o = torch.optim.SGD(net.parameters(), lr=0.1)
warm = CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.001)
iters = 4
lrs = []
for epoch in range(4):
    for i in range(iters):
        o.step()
        warm.step(epoch + i / iters)
        lrs.append(round(o.param_groups[0]["lr"], 5))
print("warm restarts", lrs)

o = torch.optim.SGD(net.parameters(), lr=0.1)
plateau = ReduceLROnPlateau(o, mode="min", factor=0.5, patience=1, threshold=0.05,
                            threshold_mode="abs", min_lr=0.01)
for val in [1.0, 0.97, 0.96, 0.90, 0.89, 0.88, 0.87, 0.86, 0.85]:
    plateau.step(val)
print("plateau", plateau.get_last_lr(), plateau.num_bad_epochs, plateau.best)

# ---- SparseAdam for the sparse embedding, Adam for the rest
torch.manual_seed(1)
emb = nn.Embedding(50, 4, sparse=True)
head = nn.Linear(4, 1)
sparse_opt = torch.optim.SparseAdam(emb.parameters(), lr=0.05)
dense_opt = torch.optim.Adam(head.parameters(), lr=0.05)
idx = torch.randint(0, 50, (32, 3))
target = torch.randn(32, 1)
for step in range(4):
    loss = F.mse_loss(head(emb(idx).mean(1)), target)
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    loss.backward()
    if step == 0:
        print("embedding grad", emb.weight.grad.layout, emb.weight.grad.is_sparse,
              tuple(emb.weight.grad.coalesce().indices().shape))
    sparse_opt.step()
    dense_opt.step()
    print(f"sparse step {step} loss {loss.item():.8f}")
untouched = sorted(set(range(50)) - set(idx.flatten().tolist()))
print("untouched rows unchanged", len(untouched),
      torch.equal(emb.weight[untouched], nn.Embedding(50, 4).weight[untouched]) is False)
try:
    head(torch.ones(1, 4)).sum().backward()
    torch.optim.SparseAdam(head.parameters(), lr=0.1).step()
except RuntimeError as e:
    print("RuntimeError", str(e)[:70])

# ---- SWA and EMA
torch.manual_seed(2)
bn_net = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
data = [(torch.randn(10, 3), torch.randn(10, 1)) for _ in range(4)]
sgd = torch.optim.SGD(bn_net.parameters(), lr=0.05)
swa_model = AveragedModel(bn_net)
ema_model = AveragedModel(bn_net, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)
swa_scheduler = SWALR(sgd, swa_lr=0.02, anneal_epochs=2, anneal_strategy="linear")
for epoch in range(4):
    for xb, yb in data:
        sgd.zero_grad()
        F.mse_loss(bn_net(xb), yb).backward()
        sgd.step()
        ema_model.update_parameters(bn_net)
    if epoch >= 1:
        swa_model.update_parameters(bn_net)
        swa_scheduler.step()
    print(f"swa epoch {epoch} lr {sgd.param_groups[0]['lr']:.5f} "
          f"n_averaged {swa_model.n_averaged.item()} ema n {ema_model.n_averaged.item()}")
print("swa running_mean before update_bn", swa_model.module[1].running_mean[:3].tolist())
update_bn(((xb,) for xb, _ in data), swa_model)
print("swa running_mean after",
      [round(v, 6) for v in swa_model.module[1].running_mean[:3].tolist()])
print("ema buffers averaged",
      [round(v, 6) for v in ema_model.module[1].running_var[:3].tolist()])
xt = torch.randn(5, 3)
swa_model.eval()
ema_model.eval()
print("swa out", [round(v, 6) for v in swa_model(xt).flatten().tolist()])
print("ema out", [round(v, 6) for v in ema_model(xt).flatten().tolist()])
print("averaged keys", list(swa_model.state_dict().keys())[:3])
