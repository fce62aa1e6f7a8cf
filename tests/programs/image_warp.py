"""Image ops for augmentation and super-resolution: affine_grid + grid_sample (modes, padding,
align_corners), interpolate, pixel_shuffle, fold/unfold patches, roll/flip, and learning a
rotation angle by gradient descent through the warp."""

import math
import torch
import torch.nn.functional as F

torch.manual_seed(4)
img = torch.rand(2, 3, 8, 8)
theta = torch.tensor(
    [[[math.cos(0.3), -math.sin(0.3), 0.1], [math.sin(0.3), math.cos(0.3), -0.2]]]
).repeat(2, 1, 1)
for ac in (False, True):
    grid = F.affine_grid(theta, img.shape, align_corners=ac)
    print("grid", ac, grid.shape, grid[0, 0, :2])
    for mode in ("bilinear", "nearest", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            out = F.grid_sample(img, grid, mode=mode, padding_mode=pad, align_corners=ac)
            print(mode, pad, f"{out.sum().item():.5f}", f"{out[1, 2, 3, 4].item():.6f}")
g3 = F.affine_grid(torch.eye(3, 4).unsqueeze(0), (1, 1, 2, 3, 4), align_corners=False)
vol = torch.arange(24.0).view(1, 1, 2, 3, 4)
print("3d", g3.shape, F.grid_sample(vol, g3, align_corners=False).flatten()[:6])

for mode, kw in [
    ("nearest", {}),
    ("nearest-exact", {}),
    ("bilinear", {"align_corners": False}),
    ("bilinear", {"align_corners": True}),
    ("bicubic", {"align_corners": False}),
    ("area", {}),
]:
    up = F.interpolate(img[:1, :1], size=(5, 11), mode=mode, **kw)
    print("interp", mode, kw, f"{up.sum().item():.5f}", f"{up[0, 0, 4, 10].item():.6f}")
print(
    "scale",
    F.interpolate(img, scale_factor=1.5, mode="bilinear").shape,
    F.interpolate(img, scale_factor=0.5, mode="bilinear", antialias=True)[0, 0, 0],
)
seq = torch.arange(6.0).view(1, 1, 6)
print(
    "1d",
    F.interpolate(seq, size=4, mode="linear", align_corners=True),
    F.interpolate(seq, scale_factor=2)[0, 0, :5],
)

ps = F.pixel_shuffle(torch.arange(32.0).view(1, 8, 2, 2), 2)
print(
    "shuffle",
    ps.shape,
    ps[0, 0],
    torch.equal(F.pixel_unshuffle(ps, 2), torch.arange(32.0).view(1, 8, 2, 2)),
)
patches = F.unfold(img, kernel_size=3, padding=1, stride=2)
print("unfold", patches.shape, f"{patches.sum().item():.5f}")
ones = torch.ones(1, 1, 6, 6)
cnt = F.fold(F.unfold(ones, 3, stride=1), (6, 6), 3, stride=1)
print("fold counts", cnt[0, 0, :3, :3])
blurred = F.fold(F.unfold(img, 3, padding=1), img.shape[-2:], 3, padding=1) / F.fold(
    F.unfold(torch.ones_like(img), 3, padding=1), img.shape[-2:], 3, padding=1
)
print(
    "overlap-avg",
    f"{blurred.mean().item():.6f}",
    torch.allclose(blurred.mean(), img.mean(), atol=0.05),
)
print(
    "roll/flip",
    torch.roll(img[0, 0, 0], shifts=3),
    torch.roll(img[0, 0, :2, :2], shifts=(1, 1), dims=(0, 1)),
    img.flip(-1)[0, 0, 0, 0] == img[0, 0, 0, -1],
    torch.fliplr(torch.eye(2)),
    torch.flipud(torch.arange(3)),
)

# recover a rotation: optimise the angle so the warped image matches the target
target = F.grid_sample(
    img,
    F.affine_grid(theta, img.shape, align_corners=False),
    align_corners=False,
    padding_mode="border",
)
ang = torch.tensor(0.0, requires_grad=True)
shift = torch.zeros(2, requires_grad=True)
opt = torch.optim.Adam([ang, shift], lr=0.05)
for _ in range(40):
    c, s = torch.cos(ang), torch.sin(ang)
    th = torch.stack([torch.stack([c, -s, shift[0]]), torch.stack([s, c, shift[1]])]).expand(
        2, 2, 3
    )
    warped = F.grid_sample(
        img,
        F.affine_grid(th, img.shape, align_corners=False),
        align_corners=False,
        padding_mode="border",
    )
    loss = F.mse_loss(warped, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("fit", f"{loss.item():.6f}", f"{ang.item():.5f}", shift.detach())
x = img[:1].clone().requires_grad_(True)
F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True).pow(2).sum().backward()
print("bicubic grad", f"{x.grad.sum().item():.5f}", f"{x.grad[0, 1, 3, 3].item():.6f}")
x.grad = None
F.grid_sample(
    x, torch.rand(1, 4, 4, 2) * 2 - 1, mode="bilinear", align_corners=True
).sum().backward()
print("grid_sample grad", f"{x.grad.sum().item():.5f}")
