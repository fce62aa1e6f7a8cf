"""Binary segmentation the Kaggle way: a SegNet-style encoder/decoder whose MaxPool2d keeps its
indices for MaxUnpool2d, depthwise-separable convolutions (groups=in_channels) with GroupNorm,
a dilated-convolution context module (ASPP-lite) with AdaptiveMaxPool2d/AdaptiveAvgPool2d
image pooling, InstanceNorm2d, a Dice + BCE loss, IoU metric, SGD with Nesterov momentum and
ReduceLROnPlateau."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)


class SeparableConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=3, dilation=1):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size,
                                   padding=dilation * (kernel_size // 2), dilation=dilation,
                                   groups=in_channels, bias=False)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


def enc_block(cin, cout):
    return nn.Sequential(SeparableConv2d(cin, cout), nn.GroupNorm(4, cout), nn.ReLU(inplace=True))


class ASPP(nn.Module):
    def __init__(self, ch, rates=(1, 2, 3)):
        super().__init__()
        self.branches = nn.ModuleList(
            [nn.Sequential(nn.Conv2d(ch, ch, 3, padding=r, dilation=r, bias=False),
                           nn.InstanceNorm2d(ch, affine=True), nn.ReLU()) for r in rates])
        self.max_pool = nn.AdaptiveMaxPool2d(1)
        self.avg_pool = nn.AdaptiveAvgPool2d((1, 1))
        self.project = nn.Conv2d(ch * (len(rates) + 2), ch, 1)

    def forward(self, x):
        h, w = x.shape[-2:]
        feats = [b(x) for b in self.branches]
        feats.append(self.max_pool(x).expand(-1, -1, h, w))
        feats.append(F.interpolate(self.avg_pool(x), size=(h, w), mode="bilinear",
                                   align_corners=False))
        return self.project(torch.cat(feats, dim=1))


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = enc_block(3, 8)
        self.enc2 = enc_block(8, 16)
        self.pool = nn.MaxPool2d(2, stride=2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, stride=2)
        self.aspp = ASPP(16)
        self.dec2 = enc_block(16, 8)
        self.dec1 = nn.Sequential(SeparableConv2d(8, 8, dilation=2), nn.ReLU(),
                                  nn.Conv2d(8, 1, 1))

    def forward(self, x):
        x = self.enc1(x)
        size1 = x.size()
        x, idx1 = self.pool(x)
        x = self.enc2(x)
        size2 = x.size()
        x, idx2 = self.pool(x)
        x = self.aspp(x)
        x = self.unpool(x, idx2, output_size=size2)
        x = self.dec2(x)
        x = self.unpool(x, idx1, output_size=size1)
        return self.dec1(x)


class DiceBCELoss(nn.Module):
    def __init__(self, weight=None, size_average=True):
        super().__init__()

    def forward(self, inputs, targets, smooth=1):
        BCE = F.binary_cross_entropy_with_logits(inputs, targets, reduction='mean')
        inputs = torch.sigmoid(inputs)
        inputs = inputs.view(-1)
        targets = targets.view(-1)
        intersection = (inputs * targets).sum()
        dice_loss = 1 - (2. * intersection + smooth) / (inputs.sum() + targets.sum() + smooth)
        return BCE + dice_loss


def iou(logits, masks, thr=0.5):
    pred = (torch.sigmoid(logits) > thr)
    m = masks.bool()
    inter = (pred & m).sum(dim=(1, 2, 3)).float()
    union = (pred | m).sum(dim=(1, 2, 3)).float()
    return ((inter + 1e-6) / (union + 1e-6)).mean().item()


def make_data(n, size=16):
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    imgs, masks = [], []
    for _ in range(n):
        cy, cx = torch.randint(5, size - 5, (2,)).tolist()
        r = float(torch.randint(3, 6, (1,)))
        m = (((yy - cy) ** 2 + (xx - cx) ** 2) <= r * r).float()
        img = torch.stack([m * 0.8, 1 - m * 0.5, m * 0.3]) + 0.25 * torch.randn(3, size, size)
        imgs.append(img)
        masks.append(m)
    return torch.stack(imgs), torch.stack(masks).unsqueeze(1)


imgs, masks = make_data(6)
print("data", imgs.shape, masks.shape, masks.mean().item() > 0)

# pooling with indices round trip
p, i = F.max_pool2d(imgs[:1], 2, return_indices=True)
u = F.max_unpool2d(p, i, 2)
print("unpool", u.shape, i.dtype, i[0, 0, 0, :4].tolist(), torch.equal(u != 0, u.abs() > 0))
amp, amp_idx = F.adaptive_max_pool2d(imgs[:1], (3, 4), return_indices=True)
print("adaptive max", amp.shape, amp_idx[0, 0].tolist())
odd, odd_idx = nn.MaxPool2d(3, stride=2, padding=1, return_indices=True)(imgs[:1, :, :15, :15])
print("odd unpool", F.max_unpool2d(odd, odd_idx, 3, stride=2, padding=1,
                                   output_size=(15, 15)).shape)

model = SegNet()
n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
print("params", n_params, model.enc1[0].depthwise.weight.shape)
criterion = DiceBCELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9, nesterov=True,
                            weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5,
                                                       patience=1)
train_x, train_y, val_x, val_y = imgs[:4], masks[:4], imgs[4:], masks[4:]
for epoch in range(8):
    model.train()
    optimizer.zero_grad()
    out = model(train_x)
    loss = criterion(out, train_y)
    loss.backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        val_out = model(val_x)
        val_loss = criterion(val_out, val_y).item()
    scheduler.step(val_loss)
    print(f"epoch {epoch} loss {loss.item():.4f} val {val_loss:.4f} "
          f"iou@0.3 {iou(val_out, val_y, 0.3):.4f} lr {optimizer.param_groups[0]['lr']:.4f}")

g = model.aspp.branches[1][0].weight.grad
print("dilated grad", g.shape, round(g.norm().item(), 5))
print("dw grad", round(model.enc2[0].depthwise.weight.grad.abs().sum().item(), 5))
