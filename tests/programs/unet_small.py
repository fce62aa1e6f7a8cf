"""A small U-Net: ConvTranspose2d, interpolate, skip concatenation, GroupNorm, InstanceNorm,
PixelShuffle, Dice + BCE loss, Adam with amsgrad, StepLR."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2)


def block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1),
        nn.GroupNorm(2, cout),
        nn.SiLU(),
        nn.Conv2d(cout, cout, 3, padding=1, padding_mode="reflect"),
        nn.InstanceNorm2d(cout, affine=True),
        nn.LeakyReLU(0.1),
    )


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.d1 = block(1, 4)
        self.d2 = block(4, 8)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.u1 = block(8, 4)
        self.sub = nn.Sequential(
            nn.Conv2d(4, 4, 1), nn.PixelShuffle(2), nn.Conv2d(1, 1, 3, padding=1)
        )
        self.head = nn.Conv2d(4, 1, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(F.max_pool2d(a, 2))
        u = torch.cat([self.up(b), a], dim=1)
        u = self.u1(u)
        side = F.interpolate(self.sub(u), size=x.shape[-2:], mode="bilinear", align_corners=False)
        return self.head(u) + 0.1 * side


def dice_loss(logits, target, eps=1.0):
    p = torch.sigmoid(logits)
    inter = (p * target).sum(dim=(1, 2, 3))
    return 1 - ((2 * inter + eps) / (p.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3)) + eps)).mean()


x = torch.randn(4, 1, 16, 16)
yy, xx = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
target = (((yy - 8) ** 2 + (xx - 8) ** 2) < 25).float().expand(4, 1, 16, 16)
net = UNet()
opt = torch.optim.Adam(net.parameters(), lr=2e-3, amsgrad=True)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
for it in range(7):
    opt.zero_grad()
    out = net(x)
    loss = F.binary_cross_entropy_with_logits(
        out, target, pos_weight=torch.tensor([2.0])
    ) + dice_loss(out, target)
    loss.backward()
    opt.step()
    sched.step()
    print(it, round(loss.item(), 5), out.shape)
with torch.no_grad():
    up = F.interpolate(x[:1], scale_factor=2, mode="nearest")
    bic = F.interpolate(x[:1], scale_factor=0.5, mode="bicubic", align_corners=True)
    area = F.adaptive_avg_pool2d(x[:1], 5)
    print(up.shape, bic.shape, area.shape, round(bic.sum().item(), 4), round(area.sum().item(), 4))
    print(
        F.pixel_unshuffle(x[:1], 2).shape,
        nn.Upsample(scale_factor=2, mode="bilinear")(x[:1]).mean().item(),
    )
