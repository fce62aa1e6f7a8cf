"""A tiny ResNet on random 'images': BatchNorm, residual blocks, AdamW + cosine schedule,
label smoothing, gradient clipping, eval mode and an optimizer state round trip."""

import io
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.short(x))


class Net(nn.Module):
    def __init__(self, n_classes=5):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True)
        )
        self.layers = nn.Sequential(Block(8, 8), Block(8, 16, 2))
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, n_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


net = Net()
print(sum(p.numel() for p in net.parameters() if p.requires_grad))
x = torch.randn(16, 3, 12, 12)
y = torch.randint(0, 5, (16,))
opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=0.05)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6, eta_min=1e-4)
crit = nn.CrossEntropyLoss(label_smoothing=0.1)
for epoch in range(6):
    net.train()
    for xb, yb in zip(x.split(8), y.split(8)):
        opt.zero_grad(set_to_none=True)
        loss = crit(net(xb), yb)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
        opt.step()
    sched.step()
    print(epoch, f"{loss.item():.5f}", f"{float(norm):.5f}", f"{sched.get_last_lr()[0]:.6f}")
net.eval()
with torch.no_grad():
    logits = net(x)
    acc = (logits.argmax(1) == y).float().mean()
print("acc", acc.item(), logits.shape)
print(net.stem[1].running_mean[:3], net.stem[1].num_batches_tracked)
buf = io.BytesIO()
torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict()}, buf)
buf.seek(0)
ck = torch.load(buf)
net2 = Net()
net2.load_state_dict(ck["model"])
opt2 = torch.optim.AdamW(net2.parameters(), lr=3e-3, weight_decay=0.05)
opt2.load_state_dict(ck["opt"])
print(sorted(ck["opt"]["state"][0].keys()), ck["sched"]["last_epoch"])
net2.eval()
with torch.no_grad():
    print(torch.allclose(net2(x), logits), (net2(x) - logits).abs().max().item() < 1e-6)
