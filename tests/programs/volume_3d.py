"""Volumetric (3-D) segmentation and classification, medical-imaging style, on tiny volumes:
a 3-D U-Net with Conv3d, BatchNorm3d, MaxPool3d, ConvTranspose3d and trilinear upsampling,
AvgPool3d/AdaptiveAvgPool3d heads, Dropout3d, channels-last-3d memory format, and a
cross-entropy loss over voxels with class weights and ignore_index."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)


def double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv3d(cin, cout, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm3d(cout),
        nn.ReLU(inplace=True),
        nn.Conv3d(cout, cout, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm3d(cout),
        nn.ReLU(inplace=True),
    )


class UNet3D(nn.Module):
    def __init__(self, in_ch=1, n_classes=3, base=4, trilinear=False):
        super().__init__()
        self.inc = double_conv(in_ch, base)
        self.down = nn.Sequential(nn.MaxPool3d(2), double_conv(base, base * 2))
        if trilinear:
            self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="trilinear",
                                                align_corners=True),
                                    nn.Conv3d(base * 2, base, 1))
        else:
            self.up = nn.ConvTranspose3d(base * 2, base, kernel_size=2, stride=2)
        self.conv_up = double_conv(base * 2, base)
        self.drop = nn.Dropout3d(0.1)
        self.outc = nn.Conv3d(base, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down(x1)
        u = self.up(x2)
        # pad if the input size was odd
        dz, dy, dx = (x1.size(2) - u.size(2), x1.size(3) - u.size(3), x1.size(4) - u.size(4))
        u = F.pad(u, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2, dz // 2, dz - dz // 2])
        x = self.conv_up(torch.cat([x1, u], dim=1))
        return self.outc(self.drop(x))


def make_volumes(n, d=8):
    zz, yy, xx = torch.meshgrid(torch.arange(d), torch.arange(d), torch.arange(d),
                                indexing="ij")
    vols, labels = [], []
    for _ in range(n):
        c = torch.randint(2, d - 2, (3,))
        dist = ((zz - c[0]) ** 2 + (yy - c[1]) ** 2 + (xx - c[2]) ** 2).float()
        lab = torch.zeros(d, d, d, dtype=torch.long)
        lab[dist <= 6] = 1
        lab[dist <= 2] = 2
        lab[0, 0, :] = -100          # unlabelled voxels
        vol = lab.clamp(min=0).float() * 0.7 + 0.3 * torch.randn(d, d, d)
        vols.append(vol)
        labels.append(lab)
    return torch.stack(vols).unsqueeze(1), torch.stack(labels)


vols, labels = make_volumes(4)
print("volumes", vols.shape, labels.shape, torch.bincount(labels[labels >= 0]).tolist())

for trilinear in (False, True):
    torch.manual_seed(1)
    model = UNet3D(trilinear=trilinear)
    class_weights = torch.tensor([0.2, 1.0, 2.0])
    criterion = nn.CrossEntropyLoss(weight=class_weights, ignore_index=-100)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
    for it in range(6):
        model.train()
        optimizer.zero_grad()
        logits = model(vols)
        loss = criterion(logits, labels)
        loss.backward()
        optimizer.step()
        if it % 2 == 1:
            print(f"trilinear={trilinear} it {it} loss {loss.item():.5f}")
    model.eval()
    with torch.no_grad():
        pred = model(vols).argmax(dim=1)
        valid = labels >= 0
        acc = (pred[valid] == labels[valid]).float().mean().item()
    print(f"trilinear={trilinear} acc {acc:.4f} "
          f"running_var {model.inc[1].running_var[:2].tolist()}")

# odd-sized input goes through the padding branch
odd = torch.randn(1, 1, 7, 9, 6)
print("odd", model(odd).shape)

# the layers one by one
x = torch.randn(2, 2, 6, 7, 8)
conv = nn.Conv3d(2, 4, kernel_size=(3, 1, 3), stride=(1, 2, 2), padding=(1, 0, 2),
                 dilation=(1, 1, 2))
y = conv(x)
print("conv3d", y.shape, round(y.sum().item(), 3))
tconv = nn.ConvTranspose3d(4, 2, kernel_size=3, stride=2, padding=1, output_padding=1)
print("convT3d", tconv(y).shape)
mp, idx = F.max_pool3d(x, 2, return_indices=True)
print("maxpool3d", mp.shape, idx[0, 0, 0].tolist(),
      F.max_unpool3d(mp, idx, 2, output_size=x.shape[-3:]).shape)
print("ceil", nn.MaxPool3d(3, stride=2, ceil_mode=True)(x).shape,
      nn.AvgPool3d(2, stride=2, count_include_pad=False, padding=1)(x).shape)
print("adaptive", nn.AdaptiveAvgPool3d((1, 2, 3))(x).shape,
      round(F.adaptive_max_pool3d(x, 2).sum().item(), 4))
tri = F.interpolate(x, scale_factor=(1.5, 1, 0.5), mode="trilinear", align_corners=False)
print("trilinear", tri.shape, round(tri.mean().item(), 5))
cl = x.to(memory_format=torch.channels_last_3d)
print("channels_last_3d", cl.is_contiguous(memory_format=torch.channels_last_3d), cl.stride(),
      torch.allclose(conv(cl), y, atol=1e-6))
bn = nn.BatchNorm3d(2, momentum=None)
for _ in range(3):
    bn(torch.randn(2, 2, 3, 3, 3))
print("cumulative bn", bn.num_batches_tracked.item(), round(bn.running_mean.sum().item(), 5))

# gradient of a 3-D conv stack wrt its input
xg = torch.randn(1, 1, 5, 5, 5, requires_grad=True)
out = F.conv_transpose3d(F.conv3d(xg, torch.ones(2, 1, 2, 2, 2) / 8), torch.ones(2, 1, 2, 2, 2))
out.pow(2).mean().backward()
print("input grad", round(xg.grad.sum().item(), 5), xg.grad[0, 0, 2, 2, :3].tolist())
