"""A deep residual MLP trained with activation checkpointing and early stopping, the usual way:
torch.utils.checkpoint.checkpoint per block (use_reentrant=False, dropout inside, so the
recomputation must replay the RNG), checkpoint_sequential over an nn.Sequential, a comparison of
gradients with and without checkpointing, a train/validation split with random_split and
DataLoader, ReduceLROnPlateau, early stopping with patience keeping
copy.deepcopy(model.state_dict()) of the best epoch, and restoring it at the end."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.manual_seed(8)


class Block(nn.Module):
    def __init__(self, dim, p=0.1):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return x + self.fc2(self.drop(F.gelu(self.fc1(self.norm(x)))))


class DeepNet(nn.Module):
    def __init__(self, dim=16, depth=4, use_checkpoint=True):
        super().__init__()
        self.inp = nn.Linear(5, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.out = nn.Linear(dim, 1)
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        x = self.inp(x)
        for blk in self.blocks:
            if self.use_checkpoint and self.training:
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.out(x).squeeze(-1)


# gradients agree with and without checkpointing (same dropout masks: RNG replayed)
ref = DeepNet(use_checkpoint=False)
ckpt = DeepNet(use_checkpoint=True)
ckpt.load_state_dict(ref.state_dict())
xb = torch.randn(8, 5)
for m in (ref, ckpt):
    torch.manual_seed(123)
    m(xb).pow(2).mean().backward()
same = all(torch.allclose(a.grad, b.grad, atol=1e-6)
           for a, b in zip(ref.parameters(), ckpt.parameters()))
print("grads match", same, f"{ckpt.inp.weight.grad.norm().item():.5f}")

seq = nn.Sequential(*[nn.Sequential(nn.Linear(6, 6), nn.Tanh()) for _ in range(6)])
inp = torch.randn(4, 6, requires_grad=True)
out = checkpoint_sequential(seq, 3, inp, use_reentrant=False)
out.sum().backward()
g_ckpt = inp.grad.clone()
inp.grad = None
seq(inp).sum().backward()
print(out.shape, torch.allclose(g_ckpt, inp.grad, atol=1e-6), f"{g_ckpt.abs().sum().item():.5f}")
(gx,) = torch.autograd.grad(checkpoint(seq, inp, use_reentrant=False).sum(), inp)
print(torch.allclose(gx, g_ckpt, atol=1e-6))

X = torch.randn(160, 5)
y = torch.sin(X[:, 0] * 2) + X[:, 1] * X[:, 2] + 0.1 * torch.randn(160)
train_set, val_set = random_split(TensorDataset(X, y), [120, 40],
                                  generator=torch.Generator().manual_seed(42))
print(len(train_set), len(val_set), train_set.indices[:5])
train_loader = DataLoader(train_set, batch_size=24, shuffle=True)
val_loader = DataLoader(val_set, batch_size=40)

model = DeepNet()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5,
                                                       patience=1)
best_loss, best_state, best_epoch = float("inf"), None, -1
patience, bad_epochs = 3, 0
for epoch in range(14):
    model.train()
    running = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item() * xb.size(0)
    model.eval()
    with torch.no_grad():
        val_loss = sum(F.mse_loss(model(xb), yb, reduction="sum").item()
                       for xb, yb in val_loader) / len(val_set)
    scheduler.step(val_loss)
    improved = val_loss < best_loss - 1e-4
    if improved:
        best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
        best_state = copy.deepcopy(model.state_dict())
    else:
        bad_epochs += 1
    print(epoch, f"{running / len(train_set):.5f}", f"{val_loss:.5f}",
          optimizer.param_groups[0]["lr"], improved)
    if bad_epochs >= patience:
        print("early stop at", epoch)
        break

print("best", best_epoch, f"{best_loss:.5f}")
current = model.out.weight.detach().clone()
model.load_state_dict(best_state)
print(torch.equal(model.out.weight, best_state["out.weight"]),
      best_state["out.weight"] is not model.out.weight,
      torch.equal(current, model.out.weight))
model.eval()
with torch.no_grad():
    val_loss = sum(F.mse_loss(model(xb), yb, reduction="sum").item()
                   for xb, yb in val_loader) / len(val_set)
print(f"{val_loss:.5f}", abs(val_loss - best_loss) < 1e-6, list(best_state)[:3])
