"""Save and load a model's and optimizer's state_dict with torch.save / torch.load."""
import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(2)
model = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x, y = torch.randn(16, 3), torch.randn(16, 1)
for _ in range(3):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print(f"loss before save {loss.item():.6f}")

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "checkpoint.pt")
    torch.save({"epoch": 3, "model": model.state_dict(), "optimizer": opt.state_dict(),
                "loss": loss.item()}, path)
    ckpt = torch.load(path)

print("keys", sorted(ckpt))
print("state keys", list(ckpt["model"].keys()))
print("optimizer state", sorted(ckpt["optimizer"]["state"][0].keys()),
      ckpt["optimizer"]["param_groups"][0]["lr"])

restored = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 1))
restored.load_state_dict(ckpt["model"])
opt2 = torch.optim.Adam(restored.parameters(), lr=0.5)
opt2.load_state_dict(ckpt["optimizer"])
print("lr restored", opt2.param_groups[0]["lr"])
model.eval()
restored.eval()
with torch.no_grad():
    print("same outputs", torch.equal(model(x), restored(x)))

# continue training both: identical trajectories
model.train()
restored.train()
for step in range(3):
    for m, o in ((model, opt), (restored, opt2)):
        o.zero_grad()
        nn.functional.mse_loss(m(x), y).backward()
        o.step()
    same = all(torch.equal(a, b) for a, b in zip(model.parameters(), restored.parameters()))
    print(f"step {step} identical {same}")
print("step count", opt2.state_dict()["state"][0]["step"].item())
missing = restored.load_state_dict({"0.weight": ckpt["model"]["0.weight"]}, strict=False)
print("missing", len(missing.missing_keys), "unexpected", missing.unexpected_keys)
print("weights", restored[0].weight[0].tolist())
