"""torch.compile the way tutorials use it: a compiled model in a training loop with BatchNorm and
a dropout layer (p=0 here: torch.compile's dropout draws other numbers than eager torch, ndgrad's
draws eager's), eval under no_grad/inference_mode, a compiled loss function, a compiled
functional helper called with different shapes, state_dict round trip through the wrapper."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, 3)
)
cmodel = torch.compile(model)
opt = torch.optim.SGD(cmodel.parameters(), lr=0.1, momentum=0.9)


@torch.compile
def loss_fn(logits, y):
    return F.cross_entropy(logits, y, label_smoothing=0.1)


@torch.compile(dynamic=True)
def normalize(v):
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-6)


x = torch.randn(32, 6)
y = torch.randint(0, 3, (32,))
for epoch in range(3):
    cmodel.train()
    for xb, yb in zip(x.split(8), y.split(8)):
        opt.zero_grad()
        loss = loss_fn(cmodel(xb), yb)
        loss.backward()
        opt.step()
    cmodel.eval()
    with torch.no_grad():
        acc = (cmodel(x).argmax(1) == y).float().mean()
    with torch.inference_mode():
        out = cmodel(x[:4])
    print(epoch, round(loss.item(), 5), round(acc.item(), 4), out.shape)
print(model[1].running_mean[:3], model[1].num_batches_tracked.item())
print(normalize(torch.randn(3, 4)).norm(dim=-1), normalize(torch.randn(5, 2)).shape)
sd = cmodel.state_dict()
print(list(sd)[:2])
fresh = nn.Sequential(
    nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, 3)
)
fresh.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in sd.items()})
fresh.eval()
with torch.no_grad():
    print(torch.allclose(fresh(x), cmodel(x), atol=1e-6))
