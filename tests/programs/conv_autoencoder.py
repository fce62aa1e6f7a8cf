"""Convolutional autoencoder: ConvTranspose2d, Upsample, PixelShuffle, interpolate, grid_sample."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)
imgs = torch.rand(8, 1, 16, 16)


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1),
            nn.LeakyReLU(0.1),
            nn.Conv2d(8, 16, 3, stride=2, padding=1),
            nn.ELU(),
        )
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 4, 3, padding=1),
            nn.PixelShuffle(2),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.dec(self.enc(x))


ae = AE()
opt = torch.optim.Adam(ae.parameters(), lr=3e-3, betas=(0.9, 0.99))
for step in range(15):
    opt.zero_grad()
    rec = ae(imgs)
    loss = F.binary_cross_entropy(rec, imgs) + 0.1 * F.l1_loss(rec, imgs)
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(step, round(loss.item(), 5), rec.shape)
up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)(imgs[:2])
print(up.shape, up[0, 0, :2, :3])
print(
    F.interpolate(imgs[:1], size=(5, 7), mode="nearest")[0, 0, 0],
    F.interpolate(imgs[:1], scale_factor=0.5, mode="area").shape,
)
theta = torch.tensor([[[0.93, -0.11, 0.037], [0.12, 0.91, -0.053]]], requires_grad=True)
grid = F.affine_grid(theta, (1, 1, 16, 16), align_corners=False)
warped = F.grid_sample(imgs[:1], grid, mode="bilinear", padding_mode="border", align_corners=False)
warped.mean().backward()
print(warped[0, 0, 3, :4], theta.grad)
print(
    F.avg_pool2d(imgs[:1], 4)[0, 0, 0],
    F.max_pool2d(imgs[:1], 2, return_indices=True)[1][0, 0, 0, :3],
)
print(F.unfold(imgs[:1], 3, stride=4).shape, F.pad(imgs[:1], (1, 2, 0, 1), mode="reflect").shape)
print(
    nn.functional.normalize(imgs.flatten(1)[:2], dim=1)[0, :3],
    F.cosine_similarity(imgs[0].flatten(), imgs[1].flatten(), dim=0),
)
