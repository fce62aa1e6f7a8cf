"""Super-resolution the ESPCN way (the old pytorch/examples super_resolution shape): conv
features, a sub-pixel PixelShuffle head, MSE training against the high-resolution image, PSNR
against bicubic/bilinear upsampling baselines, PixelUnshuffle as the inverse, and the
F.interpolate knobs people reach for (scale_factor, recompute_scale_factor, align_corners)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
import torch.optim as optim

torch.manual_seed(123)


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


def psnr(a, b):
    mse = F.mse_loss(a, b)
    return 10 * math.log10(1 / mse.item())


# smooth "natural" images in [0, 1]: sums of random sinusoids, 24x24 high resolution
def make_images(n, size=24):
    t = torch.linspace(0, 1, size)
    yy, xx = torch.meshgrid(t, t, indexing="ij")
    imgs = []
    for _ in range(n):
        f = torch.rand(3, 2) * 6
        ph = torch.rand(3) * 6.28
        img = sum(torch.sin(f[k, 0] * xx * 3.14 + f[k, 1] * yy * 3.14 + ph[k]) for k in range(3))
        imgs.append((img - img.min()) / (img.max() - img.min()))
    return torch.stack(imgs).unsqueeze(1)


upscale = 3
hr = make_images(12)
lr_img = F.interpolate(hr, scale_factor=1 / upscale, mode="area")
print("hr", hr.shape, "lr", lr_img.shape)

# baselines: classical upsampling
for mode, ac in [("nearest", None), ("bilinear", False), ("bilinear", True),
                 ("bicubic", False), ("bicubic", True)]:
    up = F.interpolate(lr_img, scale_factor=upscale, mode=mode, align_corners=ac)
    if mode == "bicubic":
        up = up.clamp(0, 1)
    print(f"{mode:8s} align_corners={ac}: psnr {psnr(up, hr):.4f}")

model = Net(upscale_factor=upscale)
criterion = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=3e-3)
train_lr, train_hr = lr_img[:9], hr[:9]
test_lr, test_hr = lr_img[9:], hr[9:]

for epoch in range(1, 16):
    epoch_loss = 0
    for i in range(0, 9, 3):
        input, target = train_lr[i:i + 3], train_hr[i:i + 3]
        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()
    if epoch % 5 == 0:
        with torch.no_grad():
            avg_psnr = sum(psnr(model(test_lr[j:j + 1]), test_hr[j:j + 1]) for j in range(3)) / 3
        print(f"===> Epoch {epoch} Avg. Loss: {epoch_loss / 3:.5f} test PSNR {avg_psnr:.3f} dB")

# PixelUnshuffle undoes PixelShuffle
ps, pu = nn.PixelShuffle(3), nn.PixelUnshuffle(3)
z = torch.randn(2, 18, 4, 5)
print(ps(z).shape, torch.equal(pu(ps(z)), z), F.pixel_unshuffle(hr[:1], 2).shape)

# Upsample modules and interpolate's scale-factor rules
x = torch.arange(2 * 5 * 7, dtype=torch.float32).reshape(1, 2, 5, 7) / 10
for m in [nn.Upsample(scale_factor=2, mode="nearest"),
          nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=False),
          nn.Upsample(size=(8, 9), mode="bicubic", align_corners=True),
          nn.UpsamplingBilinear2d(scale_factor=2), nn.UpsamplingNearest2d(size=(3, 4))]:
    y = m(x)
    print(type(m).__name__, tuple(y.shape), round(y.sum().item(), 3),
          round(y[0, 1, -1, -1].item(), 4))
for rsf in [None, False, True]:
    y = F.interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=rsf)
    print("recompute", rsf, tuple(y.shape), round(y.mean().item(), 5),
          round(y[0, 0, 2, 3].item(), 5))
y = F.interpolate(x, scale_factor=(0.6, 1.3), mode="nearest-exact")
print("nearest-exact", tuple(y.shape), y[0, 0].tolist())
y = F.interpolate(x[:, :, 0], scale_factor=2.5, mode="linear", align_corners=True)
print("linear", tuple(y.shape), round(y.sum().item(), 4))

# gradient flows through the upsamplers
xg = torch.rand(1, 1, 4, 4, requires_grad=True)
F.interpolate(xg, scale_factor=2, mode="bicubic", align_corners=False).pow(2).sum().backward()
print("bicubic grad", xg.grad.sum().item() == xg.grad.sum().item(), xg.grad[0, 0, 0].tolist())
