"""Neural fields: a SIREN (sine activations with its special initialization) fit to a 2-D
image and its gradient (Sobel via conv2d vs autograd), and a tiny NeRF in flatland: rays
through a 2-D density field, stratified sampling, volume rendering with an exclusive cumprod
of transmittance, and hierarchical importance sampling by inverse-CDF with searchsorted."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(6)

# ---------------------------------------------------------------------- SIREN
class SineLayer(nn.Module):
    def __init__(self, i, o, first=False, omega=30.0):
        super().__init__()
        self.omega = omega
        self.linear = nn.Linear(i, o)
        with torch.no_grad():
            bound = 1 / i if first else math.sqrt(6 / i) / omega
            self.linear.weight.uniform_(-bound, bound)

    def forward(self, x):
        return torch.sin(self.omega * self.linear(x))


siren = nn.Sequential(SineLayer(2, 32, first=True), SineLayer(32, 32), nn.Linear(32, 1))
res = 16
g = torch.linspace(-1, 1, res)
coords = torch.stack(torch.meshgrid(g, g, indexing="xy"), -1).reshape(-1, 2)
img = (torch.sin(3 * coords[:, 0]) * torch.cos(2 * coords[:, 1])).unsqueeze(1)
opt = torch.optim.Adam(siren.parameters(), lr=1e-3)
for step in range(60):
    loss = F.mse_loss(siren(coords), img)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 59:
        print(f"siren {step} psnr {(-10 * torch.log10(loss)).item():.4f}")

c = coords.clone().requires_grad_(True)
out = siren(c)
grad = torch.autograd.grad(out.sum(), c, create_graph=True)[0]
lap = sum(torch.autograd.grad(grad[:, i].sum(), c, retain_graph=True)[0][:, i] for i in range(2))
sobel_x = torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]]) / 8
im = out.detach().reshape(1, 1, res, res)
sob = F.conv2d(F.pad(im, (1, 1, 1, 1), mode="replicate"), sobel_x[None, None]) / (2 / (res - 1))
corr = torch.corrcoef(torch.stack([sob.flatten(), grad[:, 0].detach()]))[0, 1]
print("sobel vs autograd corr", round(corr.item(), 4))
print("laplacian mean", lap.mean().item(), grad.norm(dim=1).max().item())


# ---------------------------------------------------------------------- flatland NeRF
torch.set_default_dtype(torch.float64)
def density_field(p):          # two soft disks
    d1 = ((p - torch.tensor([0.3, 0.0])) ** 2).sum(-1)
    d2 = ((p - torch.tensor([-0.4, 0.2])) ** 2).sum(-1)
    return 20 * torch.exp(-d1 / 0.02) + 10 * torch.exp(-d2 / 0.05)


def color_field(p):
    return torch.sigmoid(3 * p[..., :1] + 1)


def render(sigma, rgb, t):
    delta = torch.cat([t[..., 1:] - t[..., :-1], torch.full_like(t[..., :1], 1e10)], -1)
    alpha = 1 - torch.exp(-sigma * delta)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[..., :1]), 1 - alpha + 1e-10], -1),
                          -1)[..., :-1]
    w = alpha * trans
    return (w.unsqueeze(-1) * rgb).sum(-2), w


def sample_pdf(bins, weights, n, det=False):
    pdf = (weights + 1e-5) / (weights + 1e-5).sum(-1, keepdim=True)
    cdf = torch.cat([torch.zeros_like(pdf[..., :1]), torch.cumsum(pdf, -1)], -1)
    u = torch.linspace(0, 1, n).expand(cdf.shape[0], n) if det else torch.rand(cdf.shape[0], n)
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.clamp(inds - 1, min=0)
    above = torch.clamp(inds, max=cdf.shape[-1] - 1)
    ig = torch.stack([below, above], -1)
    shape = [ig.shape[0], ig.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(shape), 2, ig)
    bins_g = torch.gather(bins.unsqueeze(1).expand(shape), 2, ig)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    tt = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + tt * (bins_g[..., 1] - bins_g[..., 0])


n_rays, n_c, n_f = 32, 16, 16
angles = torch.linspace(-0.4, 0.4, n_rays)
origins = torch.stack([-torch.ones(n_rays), torch.zeros(n_rays)], -1)
dirs = torch.stack([torch.cos(angles), torch.sin(angles)], -1)
near, far = 0.0, 2.0
t_c = torch.linspace(near, far, n_c).expand(n_rays, n_c)
mids = 0.5 * (t_c[..., 1:] + t_c[..., :-1])
upper = torch.cat([mids, t_c[..., -1:]], -1)
lower = torch.cat([t_c[..., :1], mids], -1)
t_c = lower + (upper - lower) * torch.rand(n_rays, n_c)
pts = origins[:, None] + dirs[:, None] * t_c[..., None]
target, w = render(density_field(pts), color_field(pts), t_c)
t_f = sample_pdf(0.5 * (t_c[..., 1:] + t_c[..., :-1]), w[..., 1:-1], n_f, det=True)
t_all, _ = torch.sort(torch.cat([t_c, t_f], -1), -1)
pts_all = origins[:, None] + dirs[:, None] * t_all[..., None]
target_f, _ = render(density_field(pts_all), color_field(pts_all), t_all)
print("fine vs coarse", (target_f - target).abs().max().item(), target_f[::8].squeeze(1))


class TinyNeRF(nn.Module):
    def __init__(self, L=4):
        super().__init__()
        self.L = L
        self.net = nn.Sequential(nn.Linear(2 + 4 * L, 32), nn.ReLU(), nn.Linear(32, 32),
                                 nn.ReLU(), nn.Linear(32, 2))

    def encode(self, p):
        freqs = 2.0 ** torch.arange(self.L) * math.pi
        ang = p[..., None] * freqs
        return torch.cat([p, torch.sin(ang).flatten(-2), torch.cos(ang).flatten(-2)], -1)

    def forward(self, p):
        h = self.net(self.encode(p))
        return F.softplus(h[..., 0]), torch.sigmoid(h[..., 1:])


model = TinyNeRF()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for it in range(40):
    sig, rgb = model(pts_all)
    pred, _ = render(sig, rgb, t_all)
    loss = F.mse_loss(pred, target_f)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 10 == 0 or it == 39:
        print(f"nerf {it} loss {loss.item():.6f}")
