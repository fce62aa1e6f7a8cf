"""Weight initialisation recipes and the random layers of a training step, each followed by a
draw that shows the generator is where torch leaves it: every nn.init function, dropout
variants, gumbel_softmax, RReLU, random data augmentation by hand (flips, crops, mixup)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def check(name, t):
    t = t.detach().float()
    print(f"{name:22s}", tuple(t.shape), round(t.sum().item(), 4), round(t.abs().max().item(), 4),
          round(torch.rand(()).item(), 6))


w = torch.empty(6, 4)
check("uniform", nn.init.uniform_(w, -0.5, 0.5))
check("normal", nn.init.normal_(w, 0.0, 0.02))
check("trunc_normal", nn.init.trunc_normal_(w, std=0.5, a=-0.5, b=0.5))
check("xavier_uniform", nn.init.xavier_uniform_(w, gain=2.0))
check("xavier_normal", nn.init.xavier_normal_(w))
check("kaiming_uniform", nn.init.kaiming_uniform_(w, a=math.sqrt(5)))
check("kaiming_normal", nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="leaky_relu"))
check("orthogonal", nn.init.orthogonal_(w, gain=1.5))
check("orthogonal wide", nn.init.orthogonal_(torch.empty(3, 7)))
check("sparse", nn.init.sparse_(torch.empty(8, 3), sparsity=0.5, std=0.1))
check("eye", nn.init.eye_(torch.empty(3, 4)))
check("dirac", nn.init.dirac_(torch.empty(4, 2, 3, 3), groups=2))
check("constant", nn.init.constant_(w, 0.3))
check("ones/zeros", nn.init.ones_(w) + nn.init.zeros_(torch.empty(6, 4)))
conv = torch.empty(8, 4, 3, 3)
check("kaiming conv", nn.init.kaiming_normal_(conv, nonlinearity="relu"))
check("trunc default", nn.init.trunc_normal_(torch.empty(50)))
print(round(nn.init.calculate_gain("tanh"), 4), round(nn.init.calculate_gain("selu"), 4),
      round(nn.init.calculate_gain("leaky_relu", 0.2), 4))

x = torch.randn(4, 6, 5, 5)
check("dropout", F.dropout(x, 0.3))
check("dropout1d", F.dropout1d(x[:, :, 0], 0.5))
check("dropout2d", nn.Dropout2d(0.5)(x))
check("dropout3d", nn.Dropout3d(0.5)(x.unsqueeze(2)))
check("alpha dropout", nn.AlphaDropout(0.2)(x))
check("feature alpha", nn.FeatureAlphaDropout(0.2)(x))
check("rrelu", F.rrelu(x, training=True))
check("gumbel soft", F.gumbel_softmax(x[:, :, 0, 0], tau=0.5))
check("gumbel hard", F.gumbel_softmax(x[:, :, 0, 0], tau=1.0, hard=True))
check("dropout inplace", F.dropout(x.clone(), 0.5, inplace=True))

imgs = torch.rand(8, 3, 12, 12)
labels = torch.randint(0, 4, (8,))
flip = torch.rand(8) < 0.5
aug = torch.where(flip[:, None, None, None], imgs.flip(-1), imgs)
i, j = torch.randint(0, 5, (2,)).tolist()
crop = F.pad(aug, (2, 2, 2, 2), mode="reflect")[:, :, i:i + 12, j:j + 12]
check("flip+crop", crop)
lam = torch.distributions.Beta(0.4, 0.4).sample().item()
perm = torch.randperm(8)
mixed = lam * imgs + (1 - lam) * imgs[perm]
y_a, y_b = labels, labels[perm]
print("mixup", perm.tolist(), round(mixed.mean().item(), 5))
r = torch.rand(1).item()
cut = int(12 * math.sqrt(1 - 0.5))
cx, cy = torch.randint(12, (2,)).tolist()
x1, x2 = max(cx - cut // 2, 0), min(cx + cut // 2, 12)
y1, y2 = max(cy - cut // 2, 0), min(cy + cut // 2, 12)
cm = imgs.clone()
cm[:, :, y1:y2, x1:x2] = imgs[perm, :, y1:y2, x1:x2]
check("cutmix", cm)
noise = torch.randn_like(imgs) * 0.1
check("gauss noise", (imgs + noise).clamp(0, 1))
erase = torch.ones(8, 1, 12, 12)
idx = torch.randint(0, 8, (3, 2))
erase[idx[:, 0], :, idx[:, 1]] = 0
check("erase", erase)
jitter = (imgs * torch.empty(8, 1, 1, 1).uniform_(0.8, 1.2)
          + torch.empty(8, 1, 1, 1).normal_(0, 0.05))
check("jitter", jitter)
