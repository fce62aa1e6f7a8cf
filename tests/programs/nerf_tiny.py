"""Tiny NeRF in the style of the tiny_nerf notebooks and nerf-pytorch: rays from a pinhole
camera (meshgrid with indexing "xy" and "ij"), stratified samples along rays, positional
encoding, an MLP for density and colour, volume rendering (cumprod of 1 - alpha with the
exclusive shift, exp, cat), hierarchical sampling from the weights' piecewise-constant PDF with
searchsorted, trained on a synthetic scene (an analytic coloured sphere)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
H = W = 8
focal = 10.0


def get_rays(H, W, focal, c2w):
    i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H),
                          indexing="ij")
    i, j = i.t(), j.t()
    dirs = torch.stack([(i - W * .5) / focal, -(j - H * .5) / focal, -torch.ones_like(i)], -1)
    rays_d = torch.sum(dirs[..., None, :] * c2w[:3, :3], -1)
    rays_o = c2w[:3, -1].expand(rays_d.shape)
    return rays_o, rays_d


def get_rays_xy(H, W, focal, c2w):
    i, j = torch.meshgrid(torch.arange(W, dtype=torch.float32),
                          torch.arange(H, dtype=torch.float32), indexing="xy")
    dirs = torch.stack([(i - W * .5) / focal, -(j - H * .5) / focal, -torch.ones_like(i)], -1)
    rays_d = (dirs[..., None, :] * c2w[:3, :3]).sum(-1)
    return c2w[:3, -1].expand(rays_d.shape), rays_d


def pose_spherical(theta, phi, radius):
    trans_t = torch.tensor([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, radius], [0, 0, 0, 1]],
                           dtype=torch.float32)
    p = phi / 180. * math.pi
    rot_phi = torch.tensor([[1, 0, 0, 0], [0, math.cos(p), -math.sin(p), 0],
                            [0, math.sin(p), math.cos(p), 0], [0, 0, 0, 1]], dtype=torch.float32)
    t = theta / 180. * math.pi
    rot_theta = torch.tensor([[math.cos(t), 0, -math.sin(t), 0], [0, 1, 0, 0],
                              [math.sin(t), 0, math.cos(t), 0], [0, 0, 0, 1]],
                             dtype=torch.float32)
    c2w = rot_theta @ rot_phi @ trans_t
    return torch.tensor([[-1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]],
                        dtype=torch.float32) @ c2w


class Embedder:
    def __init__(self, multires, include_input=True):
        self.freq_bands = 2. ** torch.linspace(0., multires - 1, steps=multires)
        self.include_input = include_input

    def __call__(self, x):
        out = [x] if self.include_input else []
        for freq in self.freq_bands:
            for p_fn in (torch.sin, torch.cos):
                out.append(p_fn(x * freq))
        return torch.cat(out, -1)


class NeRF(nn.Module):
    def __init__(self, D=3, Wd=32, multires=4, multires_views=2):
        super().__init__()
        self.embed = Embedder(multires)
        self.embed_dirs = Embedder(multires_views)
        in_ch, in_dir = 3 + 3 * 2 * multires, 3 + 3 * 2 * multires_views
        self.pts_linears = nn.ModuleList([nn.Linear(in_ch, Wd)] + [
            nn.Linear(Wd, Wd) if i != 1 else nn.Linear(Wd + in_ch, Wd) for i in range(D - 1)])
        self.alpha_linear = nn.Linear(Wd, 1)
        self.feature_linear = nn.Linear(Wd, Wd)
        self.views_linear = nn.Linear(Wd + in_dir, Wd // 2)
        self.rgb_linear = nn.Linear(Wd // 2, 3)

    def forward(self, pts, viewdirs):
        x = self.embed(pts)
        h = x
        for i, layer in enumerate(self.pts_linears):
            if i == 2:
                h = torch.cat([x, h], -1)
            h = F.relu(layer(h))
        alpha = self.alpha_linear(h)
        feature = self.feature_linear(h)
        h = F.relu(self.views_linear(torch.cat([feature, self.embed_dirs(viewdirs)], -1)))
        return torch.cat([self.rgb_linear(h), alpha], -1)


def raw2outputs(raw, z_vals, rays_d, raw_noise_std=0.0, white_bkgd=False):
    raw2alpha = lambda raw, dists, act_fn=F.relu: 1. - torch.exp(-act_fn(raw) * dists)  # noqa
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.tensor([1e10]).expand(dists[..., :1].shape)], -1)
    dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
    rgb = torch.sigmoid(raw[..., :3])
    noise = torch.randn(raw[..., 3].shape) * raw_noise_std if raw_noise_std > 0. else 0.
    alpha = raw2alpha(raw[..., 3] + noise, dists)
    weights = alpha * torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)),
                                               1. - alpha + 1e-10], -1), -1)[:, :-1]
    rgb_map = torch.sum(weights[..., None] * rgb, -2)
    depth_map = torch.sum(weights * z_vals, -1)
    disp_map = 1. / torch.max(1e-10 * torch.ones_like(depth_map),
                              depth_map / torch.sum(weights, -1))
    acc_map = torch.sum(weights, -1)
    if white_bkgd:
        rgb_map = rgb_map + (1. - acc_map[..., None])
    return rgb_map, disp_map, acc_map, weights, depth_map


def sample_pdf(bins, weights, N_samples, det=False):
    weights = weights + 1e-5
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    if det:
        u = torch.linspace(0., 1., steps=N_samples)
        u = u.expand(list(cdf.shape[:-1]) + [N_samples])
    else:
        u = torch.rand(list(cdf.shape[:-1]) + [N_samples])
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = (cdf_g[..., 1] - cdf_g[..., 0])
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])


def render_rays(model, rays_o, rays_d, near=2., far=6., N_samples=16, N_importance=8,
                perturb=1.0):
    N_rays = rays_o.shape[0]
    viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
    t_vals = torch.linspace(0., 1., steps=N_samples)
    z_vals = (near * (1. - t_vals) + far * t_vals).expand([N_rays, N_samples])
    if perturb > 0.:
        mids = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
        upper = torch.cat([mids, z_vals[..., -1:]], -1)
        lower = torch.cat([z_vals[..., :1], mids], -1)
        z_vals = lower + (upper - lower) * torch.rand(z_vals.shape)
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
    vd = viewdirs[:, None].expand(pts.shape)
    raw = model(pts, vd)
    rgb0, _, _, weights, _ = raw2outputs(raw, z_vals, rays_d)
    z_vals_mid = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
    z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1], N_importance, det=(perturb == 0.))
    z_samples = z_samples.detach()
    z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
    raw = model(pts, viewdirs[:, None].expand(pts.shape))
    rgb_map, disp_map, acc_map, _, depth = raw2outputs(raw, z_vals, rays_d)
    return rgb_map, rgb0, acc_map, depth


def sphere_target(rays_o, rays_d, radius=1.0):
    d = F.normalize(rays_d, dim=-1)
    b = (rays_o * d).sum(-1)
    c = (rays_o ** 2).sum(-1) - radius ** 2
    disc = b ** 2 - c
    hit = disc > 0
    t = -b - torch.sqrt(disc.clamp(min=0))
    p = rays_o + t[:, None] * d
    col = torch.where(hit[:, None], 0.5 + 0.5 * p / radius, torch.zeros_like(p))
    return col, hit


c2w = pose_spherical(30., -30., 4.)
ro, rd = get_rays(H, W, focal, c2w)
ro2, rd2 = get_rays_xy(H, W, focal, c2w)
print("rays", tuple(ro.shape), tuple(rd.shape), "ij.t() == xy:", torch.allclose(rd, rd2))
print("pose", [round(v, 4) for v in c2w[:3, 3].tolist()])
emb = Embedder(4)
print("embed dim", emb(torch.zeros(1, 3)).shape[-1],
      [round(v, 4) for v in emb(torch.tensor([[0.1, -0.2, 0.3]]))[0, 3:9].tolist()])

poses = [pose_spherical(th, -30., 4.) for th in (0., 90., 180., 270.)]
rays = [get_rays(H, W, focal, p) for p in poses]
rays_o = torch.cat([r[0].reshape(-1, 3) for r in rays])
rays_d = torch.cat([r[1].reshape(-1, 3) for r in rays])
target, hit = sphere_target(rays_o, rays_d)
print("rays total", rays_o.shape[0], "hit", int(hit.sum()))

model = NeRF()
opt = torch.optim.Adam(model.parameters(), lr=5e-3, betas=(0.9, 0.999))
img2mse = lambda x, y: torch.mean((x - y) ** 2)  # noqa: E731
mse2psnr = lambda x: -10. * torch.log(x) / torch.log(torch.tensor([10.]))  # noqa: E731
for step in range(25):
    idx = torch.randperm(rays_o.shape[0])[:64]
    rgb, rgb0, acc, depth = render_rays(model, rays_o[idx], rays_d[idx])
    img_loss = img2mse(rgb, target[idx])
    loss = img_loss + img2mse(rgb0, target[idx])
    psnr = mse2psnr(img_loss)
    opt.zero_grad()
    loss.backward()
    opt.step()
    new_lrate = 5e-3 * (0.1 ** (step / 250))
    for param_group in opt.param_groups:
        param_group["lr"] = new_lrate
    if step % 6 == 0 or step == 24:
        print(f"step {step:2d} loss {loss.item():.5f} psnr {psnr.item():.3f}")

with torch.no_grad():
    rgb, _, acc, depth = render_rays(model, rays_o[:64], rays_d[:64], perturb=0.)
print(f"eval rgb {rgb.mean().item():.5f} acc {acc.mean().item():.5f} "
      f"depth {depth.mean().item():.4f}")
bins = torch.linspace(0, 1, 6).expand(3, 6)
w = torch.tensor([[0.1, 0.5, 0.2, 0.1, 0.1], [1.0, 0, 0, 0, 0], [0.2] * 5])
print("pdf samples", [[round(v, 4) for v in r] for r in sample_pdf(bins, w, 4, det=True).tolist()])
print("searchsorted", torch.searchsorted(torch.tensor([0., .25, .5, 1.]),
                                         torch.tensor([0., .3, .5, .99]), right=True).tolist(),
      torch.searchsorted(torch.tensor([0., .25, .5, 1.]), torch.tensor([.5]), side="left").tolist())
