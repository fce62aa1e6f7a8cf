"""Image augmentation written by hand in a training loop, as in Kaggle kernels: per-channel
normalisation with mean/std broadcasting, random crop after F.pad with reflect padding,
horizontal flips with torch.flip on a random subset, random erasing (cutout), mixup and cutmix
with lam drawn from torch.distributions.Beta, the mixed cross-entropy, and test-time
augmentation (average of flipped predictions)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Beta

torch.manual_seed(6)
N, C, H, W, K = 48, 3, 12, 12, 4
images = torch.rand(N, C, H, W)
labels = torch.randint(0, K, (N,))
for k in range(K):                               # class-dependent colour tints
    images[labels == k, k % C] += 0.5
images = images.clamp(0, 1)

mean = images.mean(dim=(0, 2, 3))
std = images.std(dim=(0, 2, 3))
print([round(v, 4) for v in mean.tolist()], [round(v, 4) for v in std.tolist()])


def normalize(x):
    return (x - mean[None, :, None, None]) / std.view(1, -1, 1, 1)


def random_crop(x, pad=2):
    b, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), mode="reflect")
    i = torch.randint(0, 2 * pad + 1, (b,))
    j = torch.randint(0, 2 * pad + 1, (b,))
    rows = (i[:, None] + torch.arange(h)[None, :])          # (B, H)
    cols = (j[:, None] + torch.arange(w)[None, :])          # (B, W)
    bidx = torch.arange(b)[:, None, None]
    return padded.permute(0, 2, 3, 1)[bidx, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)


def random_flip(x, p=0.5):
    flip = torch.rand(x.size(0)) < p
    x = x.clone()
    x[flip] = torch.flip(x[flip], dims=[3])
    return x, flip


def random_erase(x, p=0.5, size=4):
    x = x.clone()
    for n in range(x.size(0)):
        if torch.rand(1).item() < p:
            top = torch.randint(0, x.size(2) - size + 1, (1,)).item()
            left = torch.randint(0, x.size(3) - size + 1, (1,)).item()
            x[n, :, top:top + size, left:left + size] = torch.randn(x.size(1), size, size)
    return x


beta = Beta(torch.tensor([0.4]), torch.tensor([0.4]))


def mixup(x, y):
    lam = beta.sample().item()
    index = torch.randperm(x.size(0))
    mixed = lam * x + (1 - lam) * x[index, :]
    return mixed, y, y[index], lam


def rand_bbox(size, lam):
    W, H = size[3], size[2]
    cut_rat = np.sqrt(1.0 - lam)
    cut_w, cut_h = int(W * cut_rat), int(H * cut_rat)
    cx = torch.randint(W, (1,)).item()
    cy = torch.randint(H, (1,)).item()
    bbx1, bby1 = np.clip(cx - cut_w // 2, 0, W), np.clip(cy - cut_h // 2, 0, H)
    bbx2, bby2 = np.clip(cx + cut_w // 2, 0, W), np.clip(cy + cut_h // 2, 0, H)
    return int(bbx1), int(bby1), int(bbx2), int(bby2)


def cutmix(x, y):
    lam = Beta(1.0, 1.0).sample().item()
    index = torch.randperm(x.size(0))
    x1, y1, x2, y2 = rand_bbox(x.size(), lam)
    x = x.clone()
    x[:, :, y1:y2, x1:x2] = x[index, :, y1:y2, x1:x2]
    lam = 1 - ((x2 - x1) * (y2 - y1) / (x.size(-1) * x.size(-2)))
    return x, y, y[index], lam


def mixed_criterion(pred, y_a, y_b, lam):
    return lam * F.cross_entropy(pred, y_a) + (1 - lam) * F.cross_entropy(pred, y_b)


crop = random_crop(images[:2])
print(crop.shape, torch.equal(random_crop(images[:1], pad=0), images[:1]))
fl, which = random_flip(images[:6])
print(which.tolist(), torch.equal(fl[which], images[:6][which].flip(-1)))
print(round(beta.mean.item(), 4), round(beta.log_prob(torch.tensor([0.3])).item(), 5))

model = nn.Sequential(
    nn.Conv2d(C, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, K))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
for epoch in range(4):
    model.train()
    perm = torch.randperm(N)
    total, seen = 0.0, 0
    for i in range(0, N, 16):
        idx = perm[i:i + 16]
        x, y = images[idx], labels[idx]
        x = random_crop(x)
        x, _ = random_flip(x)
        x = normalize(x)
        if epoch % 2 == 0:
            x, y_a, y_b, lam = mixup(x, y)
        else:
            x = random_erase(x)
            x, y_a, y_b, lam = cutmix(x, y)
        out = model(x)
        loss = mixed_criterion(out, y_a, y_b, lam)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
        seen += len(idx)
    print(epoch, f"{total / seen:.5f}", f"{lam:.4f}")

model.eval()
with torch.no_grad():
    x = normalize(images)
    p1 = F.softmax(model(x), dim=1)
    p2 = F.softmax(model(torch.flip(x, dims=[3])), dim=1)
    tta = (p1 + p2) / 2
print((p1.argmax(1) == labels).float().mean().item(),
      (tta.argmax(1) == labels).float().mean().item())
print([round(v, 4) for v in tta[:3].max(1).values.tolist()])
