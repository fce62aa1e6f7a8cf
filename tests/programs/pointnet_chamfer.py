"""Point clouds: farthest point sampling with an argmax loop, kNN grouping with cdist + topk,
a tiny PointNet classifier (shared MLP as Conv1d, max over points, input T-net with an
orthogonality penalty), and a point-set autoencoder trained with the chamfer distance."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)


def make_shape(kind, n=64):
    u = torch.rand(n, 2)
    if kind == 0:       # sphere
        v = torch.randn(n, 3)
        return v / v.norm(dim=1, keepdim=True)
    if kind == 1:       # cube surface
        p = torch.rand(n, 3) * 2 - 1
        face = torch.randint(0, 3, (n,))
        sign = torch.randint(0, 2, (n,)).float() * 2 - 1
        p[torch.arange(n), face] = sign
        return p
    # cylinder
    th = u[:, 0] * 6.2832
    return torch.stack([th.cos(), th.sin(), u[:, 1] * 2 - 1], 1)


labels = torch.arange(3).repeat(8)
clouds = torch.stack([make_shape(int(k)) for k in labels])       # (24, 64, 3)
print(clouds.shape, clouds.abs().max().item() <= 1.0 + 1e-6)


def farthest_point_sample(xyz, npoint):
    B, N, _ = xyz.shape
    centroids = torch.zeros(B, npoint, dtype=torch.long)
    distance = torch.ones(B, N) * 1e10
    farthest = torch.zeros(B, dtype=torch.long)
    batch_indices = torch.arange(B, dtype=torch.long)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch_indices, farthest, :].view(B, 1, 3)
        dist = torch.sum((xyz - centroid) ** 2, -1)
        mask = dist < distance
        distance[mask] = dist[mask]
        farthest = torch.max(distance, -1)[1]
    return centroids


def index_points(points, idx):
    B = points.shape[0]
    view_shape = list(idx.shape)
    view_shape[1:] = [1] * (len(view_shape) - 1)
    repeat_shape = list(idx.shape)
    repeat_shape[0] = 1
    batch_indices = torch.arange(B, dtype=torch.long).view(view_shape).repeat(repeat_shape)
    return points[batch_indices, idx, :]


fps = farthest_point_sample(clouds[:2], 8)
print("fps", fps)
centers = index_points(clouds[:2], fps)
d = torch.cdist(centers, clouds[:2])                     # (2, 8, 64)
knn_d, knn_idx = d.topk(5, dim=-1, largest=False)
groups = index_points(clouds[:2], knn_idx)               # (2, 8, 5, 3)
print("groups", groups.shape, knn_d[0, 0], (groups - centers.unsqueeze(2)).norm(dim=-1).max())


class TNet(nn.Module):
    def __init__(self, k=3):
        super().__init__()
        self.k = k
        self.conv = nn.Sequential(nn.Conv1d(k, 16, 1), nn.BatchNorm1d(16), nn.ReLU(),
                                  nn.Conv1d(16, 32, 1), nn.ReLU())
        self.fc = nn.Linear(32, k * k)
        nn.init.zeros_(self.fc.weight)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x):
        B = x.size(0)
        x = torch.max(self.conv(x), 2, keepdim=True)[0].view(B, -1)
        iden = torch.eye(self.k).flatten().unsqueeze(0).repeat(B, 1)
        return (self.fc(x) + iden).view(-1, self.k, self.k)


class PointNet(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.tnet = TNet()
        self.mlp = nn.Sequential(nn.Conv1d(3, 32, 1), nn.BatchNorm1d(32), nn.ReLU(),
                                 nn.Conv1d(32, 64, 1), nn.BatchNorm1d(64), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Dropout(0.3),
                                  nn.Linear(32, classes))

    def forward(self, pts):
        x = pts.transpose(2, 1)
        trans = self.tnet(x)
        x = torch.bmm(x.transpose(2, 1), trans).transpose(2, 1)
        x = self.mlp(x)
        x, argmax = x.max(dim=2)
        return F.log_softmax(self.head(x), dim=1), trans, argmax


def orth_reg(trans):
    eye = torch.eye(trans.size(1))[None]
    return torch.mean(torch.norm(torch.bmm(trans, trans.transpose(2, 1)) - eye, dim=(1, 2)))


net = PointNet()
opt = torch.optim.Adam(net.parameters(), lr=3e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
for epoch in range(20):
    net.train()
    perm = torch.randperm(24)
    for b in range(0, 24, 8):
        idx = perm[b:b + 8]
        pts = clouds[idx] @ torch.linalg.qr(torch.randn(3, 3))[0]   # random rotation
        out, trans, _ = net(pts)
        loss = F.nll_loss(out, labels[idx]) + 1e-3 * orth_reg(trans)
        opt.zero_grad()
        loss.backward()
        opt.step()
    sched.step()
    if epoch % 5 == 4:
        print(f"epoch {epoch} loss {loss.item():.5f} lr {sched.get_last_lr()[0]:.5f}")
net.eval()
with torch.no_grad():
    out, trans, argmax = net(clouds)
    print("acc", (out.argmax(1) == labels).float().mean().item(), argmax.shape,
          argmax.unique().numel() > 1)


def chamfer(a, b):
    d = torch.cdist(a, b) ** 2
    return d.min(dim=2).values.mean(1) + d.min(dim=1).values.mean(1)


class PointAE(nn.Module):
    def __init__(self, n=64, z=16):
        super().__init__()
        self.n = n
        self.enc = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, z))
        self.dec = nn.Sequential(nn.Linear(z, 64), nn.ReLU(), nn.Linear(64, n * 3))

    def forward(self, x):
        z = self.enc(x).amax(dim=1)
        return self.dec(z).view(-1, self.n, 3)


ae = PointAE()
opt = torch.optim.AdamW(ae.parameters(), lr=5e-3)
for step in range(40):
    rec = ae(clouds)
    loss = chamfer(rec, clouds).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 or step == 39:
        print(f"ae step {step} chamfer {loss.item():.5f}")
print("per-class chamfer", chamfer(ae(clouds), clouds).detach().view(8, 3).mean(0))
