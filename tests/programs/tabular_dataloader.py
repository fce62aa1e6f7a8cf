"""Tabular classification with Dataset/DataLoader, BatchNorm1d, AdamW, OneCycleLR, checkpoints."""

import io
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader, random_split

torch.manual_seed(42)
N, D = 300, 10
X = torch.randn(N, D)
w_true = torch.randn(D)
y = ((X @ w_true + 0.3 * torch.randn(N)) > 0).long()


class Tab(Dataset):
    def __init__(self, X, y):
        self.X, self.y = X, y

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return {"x": self.X[i], "y": self.y[i]}


full = Tab(X, y)
train_ds, val_ds = random_split(full, [240, 60], generator=torch.Generator().manual_seed(0))
train_dl = DataLoader(train_ds, batch_size=32, shuffle=True, drop_last=True)
val_dl = DataLoader(val_ds, batch_size=64)

model = nn.Sequential(
    nn.Linear(D, 32, bias=False),
    nn.BatchNorm1d(32),
    nn.GELU(),
    nn.Dropout(0.1),
    nn.Linear(32, 16),
    nn.SiLU(),
    nn.Linear(16, 2),
)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-2, total_steps=10 * len(train_dl))
best, best_state, patience = float("inf"), None, 0
for epoch in range(10):
    model.train()
    for batch in train_dl:
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(batch["x"]), batch["y"], label_smoothing=0.05)
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    model.eval()
    with torch.no_grad():
        vl, correct = 0.0, 0
        for batch in val_dl:
            out = model(batch["x"])
            vl += F.cross_entropy(out, batch["y"], reduction="sum").item()
            correct += (out.argmax(1) == batch["y"]).sum().item()
    vl /= len(val_ds)
    acc, lr = correct / len(val_ds), sched.get_last_lr()[0]
    print(f"epoch {epoch} val_loss {vl:.4f} acc {acc:.3f} lr {lr:.5f}")
    if vl < best:
        best, patience = vl, 0
        best_state = {k: v.clone() for k, v in model.state_dict().items()}
    else:
        patience += 1
buf = io.BytesIO()
torch.save({"model": best_state, "opt": opt.state_dict()}, buf)
buf.seek(0)
ck = torch.load(buf)
model.load_state_dict(ck["model"])
opt.load_state_dict(ck["opt"])
print("restored", sorted(ck["model"].keys())[:3], ck["opt"]["param_groups"][0]["lr"] > 0)
print("num_batches_tracked", int(model[1].num_batches_tracked))
