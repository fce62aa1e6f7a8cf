"""Mixed precision on CPU: torch.autocast with bfloat16, GradScaler("cpu") with the
scale/unscale_/step/update pattern, gradient accumulation and clipping, autocast-disabled
regions, dtypes inside and outside the autocast region."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cpu"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.ln = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = torch.flatten(x, 1)
        h = self.fc1(x)
        self.dtypes = (x.dtype, h.dtype)
        h = self.ln(F.gelu(h))
        return self.fc2(h)


model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8, growth_interval=2)
x = torch.randn(16, 3, 8, 8)
y = torch.randint(0, 5, (16,))
accum = 2
for step in range(5):
    for k in range(accum):
        xb, yb = x[k * 8:(k + 1) * 8], y[k * 8:(k + 1) * 8]
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            logits = model(xb)
            loss = F.cross_entropy(logits, yb) / accum
        scaler.scale(loss).backward()
    scaler.unscale_(opt)
    gnorm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=True)
    print(step, f"{loss.item() * accum:.3f}", logits.dtype, loss.dtype, model.dtypes,
          scaler.get_scale(), f"{float(gnorm):.2f}")

print("param dtype", model.fc1.weight.dtype, model.fc1.weight.grad)
with torch.autocast("cpu", dtype=torch.bfloat16):
    a = torch.randn(4, 4)
    b = a @ a.T
    c = torch.mm(a, a)
    with torch.autocast("cpu", enabled=False):
        d = a @ a
        e = b.float() @ a
    f = torch.softmax(b, dim=-1)
    g = b + a
    print(b.dtype, c.dtype, d.dtype, e.dtype, f.dtype, g.dtype, torch.is_autocast_enabled("cpu"))
print(torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"))

# inf gradients: the step is skipped and the scale halves
w = nn.Parameter(torch.ones(3))
o2 = torch.optim.Adam([w], lr=0.1)
s2 = torch.amp.GradScaler("cpu", init_scale=4.0)
(w * torch.tensor([1.0, float("inf"), 2.0])).sum().backward()
s2.scale(w.sum())
s2.step(o2)
s2.update()
print("skipped", w.tolist(), s2.get_scale(), len(o2.state))
st = scaler.state_dict()
print(sorted(st), st["scale"], st["growth_factor"], st["_growth_tracker"])
s3 = torch.amp.GradScaler("cpu")
s3.load_state_dict(st)
print(s3.get_scale(), s3.get_growth_interval(), s3.is_enabled())
