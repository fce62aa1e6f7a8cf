"""Differentiable interpolation as in scientific-ML and medical-imaging code: an np.interp
equivalent built on searchsorted (with gradients w.r.t. the sample values and query points),
natural cubic splines from a tridiagonal solve, 1-D and 3-D interpolate modes (linear,
trilinear, nearest-exact, area, bicubic with antialias, scale factors), volumetric affine_grid
+ grid_sample registration of a 3-D blob by gradient descent, and grid_sample on 1-D signals."""

import math
import torch
import torch.nn.functional as F

torch.manual_seed(17)


def interp(xq, xp, fp):
    """torch version of numpy.interp (xp increasing, clamped at the ends)."""
    idx = torch.searchsorted(xp, xq).clamp(1, len(xp) - 1)
    x0, x1 = xp[idx - 1], xp[idx]
    w = ((xq - x0) / (x1 - x0)).clamp(0, 1)
    return fp[idx - 1] * (1 - w) + fp[idx] * w


xp = torch.sort(torch.rand(12)).values * 4
fp = torch.sin(xp).requires_grad_(True)
xq = torch.linspace(-0.5, 4.5, 9).requires_grad_(True)
yq = interp(xq, xp, fp)
yq.sum().backward()
print("interp", yq.detach(), fp.grad[:5], xq.grad)


def natural_spline(x, y):
    n = len(x) - 1
    h = x[1:] - x[:-1]
    A = torch.zeros(n + 1, n + 1, dtype=x.dtype)
    r = torch.zeros(n + 1, dtype=x.dtype)
    A[0, 0] = A[n, n] = 1.0
    i = torch.arange(1, n)
    A[i, i - 1] = h[:-1]
    A[i, i] = 2 * (h[:-1] + h[1:])
    A[i, i + 1] = h[1:]
    r[1:n] = 3 * ((y[2:] - y[1:-1]) / h[1:] - (y[1:-1] - y[:-2]) / h[:-1])
    c = torch.linalg.solve(A, r)
    b = (y[1:] - y[:-1]) / h - h * (2 * c[:-1] + c[1:]) / 3
    d = (c[1:] - c[:-1]) / (3 * h)
    return b, c[:-1], d


def spline_eval(xq, x, y, coeffs):
    b, c, d = coeffs
    k = (torch.searchsorted(x, xq) - 1).clamp(0, len(x) - 2)
    t = xq - x[k]
    return y[k] + b[k] * t + c[k] * t ** 2 + d[k] * t ** 3


xk = torch.linspace(0, 2 * math.pi, 9, dtype=torch.float64)
yk = torch.sin(xk).requires_grad_(True)
co = natural_spline(xk, yk)
xe = torch.linspace(0.1, 6.1, 7, dtype=torch.float64)
ys = spline_eval(xe, xk, yk, co)
(g,) = torch.autograd.grad(ys.sum(), yk)
print("spline", ys.detach(), (ys - torch.sin(xe)).abs().max().item() < 0.02, g[:4])

# 1-D resampling of a signal
sig = torch.sin(torch.linspace(0, 6, 20)).view(1, 1, -1)
for mode, ac in (("linear", False), ("linear", True), ("nearest", None),
                 ("nearest-exact", None), ("area", None)):
    kw = {} if ac is None else {"align_corners": ac}
    up = F.interpolate(sig, size=33, mode=mode, **kw)
    down = F.interpolate(sig, scale_factor=0.35, mode=mode, **kw)
    print("1d", mode, ac, up[0, 0, :4], down.shape, down.sum().item())
print("recompute", F.interpolate(sig, scale_factor=1.7, mode="linear",
                                 recompute_scale_factor=True)[0, 0, -3:])

# 2-D antialiased downsampling and bicubic upsampling
img = torch.rand(1, 2, 16, 16)
for aa in (False, True):
    for mode in ("bilinear", "bicubic"):
        d = F.interpolate(img, size=(5, 7), mode=mode, antialias=aa, align_corners=False)
        print("2d", mode, aa, round(d.sum().item(), 4), d[0, 1, 2, :3])
u = F.interpolate(img, scale_factor=(1.5, 2.25), mode="bicubic", align_corners=True)
print("bicubic up", u.shape, round(u.mean().item(), 6))

# 3-D volumes: trilinear resize and an affine registration by gradient descent
zz, yy, xx = torch.meshgrid(*[torch.linspace(-1, 1, 12)] * 3, indexing="ij")


def blob(cx, cy, cz):
    return torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2 + (zz - cz) ** 2) / 0.1)[None, None]


vol = blob(0.2, -0.1, 0.0)
print("trilinear", F.interpolate(vol, size=(6, 8, 10), mode="trilinear").shape,
      round(F.interpolate(vol, scale_factor=0.5, mode="trilinear").sum().item(), 5),
      round(F.interpolate(vol, size=(5, 5, 5), mode="area").max().item(), 5))
target = blob(-0.1, 0.15, 0.1)
shift = torch.zeros(3, requires_grad=True)
opt = torch.optim.Adam([shift], lr=0.05)
for step in range(40):
    theta = torch.cat([torch.eye(3), shift.view(3, 1)], 1).unsqueeze(0)
    grid = F.affine_grid(theta, vol.shape, align_corners=False)
    warped = F.grid_sample(vol, grid, mode="bilinear", padding_mode="border",
                           align_corners=False)
    loss = F.mse_loss(warped, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print("register", step, round(loss.item(), 8), shift.detach())
print("recovered shift", shift.detach(), grid.shape)
near = F.grid_sample(vol, grid.detach(), mode="nearest", align_corners=True)
print("nearest 3d", round(near.sum().item(), 5))

# grid_sample on a 1-D signal stored as height-1 images (common trick for warping series)
series = torch.cumsum(torch.randn(1, 1, 1, 30), -1)
q = torch.rand(1, 1, 10, 1) * 2 - 1
grid1 = torch.cat([q, torch.zeros_like(q)], -1)
series.requires_grad_(True)
vals = F.grid_sample(series, grid1, align_corners=True)
vals.sum().backward()
print("1d warp", vals.view(-1)[:4], series.grad.view(-1).nonzero().numel(),
      series.grad.sum().item())
