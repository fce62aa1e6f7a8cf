"""A capsule network (Sabour et al. 2017) shrunk to 8x8 digits: primary capsules from a conv,
squash, routing-by-agreement with softmax over the output capsules and 5-D matmul/einsum
predictions, margin loss and a masked reconstruction decoder."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

# synthetic "digits": 4 classes of 10x10 stroke patterns plus noise
base = torch.zeros(4, 10, 10)
base[0, 2:8, 4:6] = 1
base[1, 4:6, 2:8] = 1
base[2].fill_diagonal_(1)
base[3, 2:8, 2:8] = 1
base[3, 3:7, 3:7] = 0
y = torch.randint(0, 4, (48,))
x = (base[y] + 0.2 * torch.randn(48, 10, 10)).clamp(0, 1).unsqueeze(1)


def squash(s, dim=-1, eps=1e-8):
    sq = (s ** 2).sum(dim=dim, keepdim=True)
    return sq / (1 + sq) * s / torch.sqrt(sq + eps)


class PrimaryCaps(nn.Module):
    def __init__(self, in_ch=16, caps=4, dim=6):
        super().__init__()
        self.dim = dim
        self.conv = nn.Conv2d(in_ch, caps * dim, kernel_size=3, stride=2)

    def forward(self, x):
        out = self.conv(x)                        # (B, caps*dim, 3, 3)
        B = out.size(0)
        out = out.view(B, -1, self.dim, out.size(-2), out.size(-1))
        out = out.permute(0, 1, 3, 4, 2).contiguous().view(B, -1, self.dim)
        return squash(out)


class DigitCaps(nn.Module):
    def __init__(self, in_caps, in_dim=6, out_caps=4, out_dim=8, iters=3):
        super().__init__()
        self.iters = iters
        self.W = nn.Parameter(0.1 * torch.randn(1, in_caps, out_caps, out_dim, in_dim))

    def forward(self, u):
        B = u.size(0)
        u = u[:, :, None, :, None]                                  # (B, in, 1, in_dim, 1)
        u_hat = torch.matmul(self.W, u).squeeze(-1)                 # (B, in, out, out_dim)
        b = torch.zeros(B, u_hat.size(1), u_hat.size(2))
        u_hat_detached = u_hat.detach()
        for r in range(self.iters):
            c = F.softmax(b, dim=2)
            if r == self.iters - 1:
                s = torch.einsum("bio,biod->bod", c, u_hat)
                v = squash(s)
            else:
                s = (c.unsqueeze(-1) * u_hat_detached).sum(dim=1)
                v = squash(s)
                b = b + torch.einsum("biod,bod->bio", u_hat_detached, v)
        return v, c


class CapsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3)
        self.primary = PrimaryCaps()
        self.digits = DigitCaps(in_caps=4 * 3 * 3)
        self.decoder = nn.Sequential(nn.Linear(4 * 8, 64), nn.ReLU(inplace=True),
                                     nn.Linear(64, 100), nn.Sigmoid())

    def forward(self, x, y=None):
        v, c = self.digits(self.primary(F.relu(self.conv1(x))))
        lengths = v.norm(dim=-1)
        if y is None:
            y = lengths.argmax(dim=1)
        mask = F.one_hot(y, num_classes=4).float()
        rec = self.decoder((v * mask[:, :, None]).flatten(1))
        return lengths, rec.view(-1, 1, 10, 10), c


def margin_loss(lengths, y, m_pos=0.9, m_neg=0.1, lam=0.5):
    T = F.one_hot(y, 4).float()
    L = T * F.relu(m_pos - lengths).pow(2) + lam * (1 - T) * F.relu(lengths - m_neg).pow(2)
    return L.sum(dim=1).mean()


model = CapsNet()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)
for epoch in range(6):
    for i in range(0, 48, 16):
        xb, yb = x[i:i + 16], y[i:i + 16]
        lengths, rec, c = model(xb, yb)
        loss = margin_loss(lengths, yb) + 0.0005 * F.mse_loss(rec, xb, reduction="sum")
        opt.zero_grad()
        loss.backward()
        opt.step()
    sched.step()
    print(f"epoch {epoch} loss {loss.item():.5f} c-sum {c.sum(2).mean().item():.4f}")
with torch.no_grad():
    lengths, rec, c = model(x)
    print("acc", (lengths.argmax(1) == y).float().mean().item())
    print("lengths[0]", lengths[0], "rec err", F.mse_loss(rec, x).item())
    print("coupling entropy", -(c * c.clamp_min(1e-12).log()).sum(2).mean().item())
