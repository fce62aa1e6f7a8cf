"""SimCLR's NT-Xent loss, knowledge distillation with temperature, and a Gram-matrix style loss."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(17)


def nt_xent(z1, z2, tau=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.t() / tau
    n = z1.shape[0]
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, targets)


enc = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 8))
opt = torch.optim.SGD(enc.parameters(), lr=0.1, momentum=0.9, nesterov=True)
x = torch.randn(16, 10)
for step in range(5):
    v1 = x + 0.1 * torch.randn_like(x)
    v2 = x * (torch.rand_like(x) > 0.2)
    loss = nt_xent(enc(v1), enc(v2))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("ntxent", step, round(loss.item(), 5))

teacher = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 5)).eval()
student = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 5))
labels = torch.randint(0, 5, (16,))
opt = torch.optim.Adam(student.parameters(), lr=1e-2)
T = 3.0
for step in range(5):
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = student(x)
    kd = (
        F.kl_div(F.log_softmax(s_logits / T, 1), F.softmax(t_logits / T, 1), reduction="batchmean")
        * T
        * T
    )
    loss = 0.7 * kd + 0.3 * F.cross_entropy(s_logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("kd", step, round(kd.item(), 5), round(loss.item(), 5))


def gram(f):
    b, c, h, w = f.shape
    f = f.view(b, c, h * w)
    return f.bmm(f.transpose(1, 2)) / (c * h * w)


conv = nn.Conv2d(3, 4, 3, padding=1).requires_grad_(False)
style = torch.rand(1, 3, 8, 8)
img = torch.rand(1, 3, 8, 8, requires_grad=True)
opt = torch.optim.LBFGS([img], lr=0.5, max_iter=5)


def closure():
    opt.zero_grad()
    loss = (
        F.mse_loss(gram(conv(img)), gram(conv(style)))
        + 1e-3 * (img[..., 1:, :] - img[..., :-1, :]).abs().mean()
    )
    loss.backward()
    return loss


for _ in range(2):
    print("style", round(opt.step(closure).item(), 8))
with torch.no_grad():
    img.clamp_(0, 1)
print(
    img.mean().item() > 0,
    F.one_hot(labels[:4], 5),
    F.gumbel_softmax(torch.zeros(2, 3), tau=1.0, hard=True).sum(1),
)
