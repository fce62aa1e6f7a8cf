"""Training-script boilerplate: device/AMP guards, compile, schedulers, EMA, DataLoader workers."""

import math
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_float32_matmul_precision("high")
device = (
    "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
)
use_amp = device == "cuda"
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
print(
    "device",
    device,
    "amp",
    use_amp,
    torch.distributed.is_available() and torch.distributed.is_initialized(),
)

X = torch.randn(256, 8)
Y = (X[:, :2].sum(1, keepdim=True) > 0).float()
dl = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True, num_workers=0, pin_memory=True)
model = nn.Sequential(nn.Linear(8, 32), nn.Mish(), nn.LayerNorm(32), nn.Linear(32, 1)).to(
    device, non_blocking=True
)
for m in model.modules():
    if isinstance(m, nn.Linear):
        nn.init.trunc_normal_(m.weight, std=0.02)
        nn.init.constant_(m.bias, 0.0)
ema = torch.optim.swa_utils.AveragedModel(
    model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9)
)
compiled = torch.compile(model)
decay, no_decay = [], []
for _name, p in model.named_parameters():
    (no_decay if p.ndim < 2 else decay).append(p)
opt = torch.optim.AdamW(
    [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
    lr=1e-2,
    fused=None,
)
warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=8)
cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=16)
sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[8])
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), patience=0
)
lossf = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.5]))
step = 0
for epoch in range(3):
    for xb, yb in dl:
        xb, yb = xb.to(device), yb.to(device)
        with torch.autocast(device_type="cuda" if use_amp else "cpu", enabled=use_amp):
            loss = lossf(compiled(xb), yb)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        sched.step()
        ema.update_parameters(model)
        step += 1
    plateau.step(loss.item())
    print(
        epoch,
        round(loss.item(), 5),
        round(float(gn), 5),
        [round(g["lr"], 6) for g in opt.param_groups],
        plateau.optimizer.param_groups[0]["lr"],
    )
with torch.no_grad():
    acc = ((ema.module(X) > 0).float() == Y).float().mean()
print("ema acc", acc.item(), ema.n_averaged.item())
print(
    "params",
    sum(p.numel() for p in model.parameters() if p.requires_grad),
    math.isfinite(loss.item()),
)
with torch.autocast("cpu", dtype=torch.bfloat16):
    out = model(X[:4])
print(out.dtype, out.shape)
