"""A small CNN with BatchNorm, Dropout, MaxPool, SGD with momentum and an LR scheduler."""
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

images = torch.randn(64, 1, 12, 12)
labels = (images[:, 0, :6].mean(dim=(1, 2)) > images[:, 0, 6:].mean(dim=(1, 2))).long()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d((2, 2)),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.25), nn.Linear(64, 2))

    def forward(self, x):
        return self.classifier(self.features(x))


model = Net().to(device)
for m in model.modules():
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        nn.init.zeros_(m.bias)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
criterion = nn.CrossEntropyLoss()

for epoch in range(6):
    model.train()
    perm = torch.randperm(64)
    total = 0.0
    for i in range(0, 64, 16):
        idx = perm[i:i + 16]
        x, y = images[idx].to(device), labels[idx].to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        optimizer.step()
        total += loss.item()
    scheduler.step()
    print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.4f} loss {total / 4:.5f}")

model.eval()
with torch.no_grad():
    out = model(images)
    acc = (out.argmax(dim=1) == labels).float().mean()
print(f"train acc {acc:.4f}")
bn = model.features[1]
print("bn running mean", bn.running_mean.view(-1)[:4].tolist())
print("bn batches", int(bn.num_batches_tracked))
print("logits", out[:3].detach().numpy().round(4).tolist())
