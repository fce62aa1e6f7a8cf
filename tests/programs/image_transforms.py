"""A torchvision-style preprocessing pipeline written by hand on uint8 CHW image tensors (what
people paste when they cannot depend on torchvision): resize with antialias on uint8, center
and random-resized crops, flips, brightness/contrast/saturation jitter with blend and clamp,
grayscale with the ITU-R 601 weights, a separable Gaussian blur (depthwise conv2d with reflect
padding), posterize/solarize on uint8 bits, ConvertImageDtype and Normalize, then a DataLoader
over the augmented images and a small CNN trained for a few steps."""

import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
random.seed(0)


def make_image(h=40, w=48):
    yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    r = (128 + 100 * torch.sin(xx / 5.0)).clamp(0, 255)
    g = (128 + 100 * torch.cos(yy / 7.0)).clamp(0, 255)
    b = ((xx + yy) * 255 / (h + w)).clamp(0, 255)
    noise = torch.randint(-20, 21, (3, h, w))
    return (torch.stack([r, g, b]).round().long() + noise).clamp(0, 255).to(torch.uint8)


def resize(img, size, antialias=True, interpolation="bilinear"):
    # torchvision: the shorter side becomes `size`, the other keeps the aspect ratio
    h, w = img.shape[-2:]
    if h <= w:
        new_h, new_w = size, int(size * w / h)
    else:
        new_h, new_w = int(size * h / w), size
    out = F.interpolate(img.unsqueeze(0), size=(new_h, new_w), mode=interpolation,
                        antialias=antialias, align_corners=False)
    return out.squeeze(0)


def center_crop(img, size):
    h, w = img.shape[-2:]
    top = int(round((h - size) / 2.0))
    left = int(round((w - size) / 2.0))
    return img[..., top:top + size, left:left + size]


def random_resized_crop_params(img, scale=(0.5, 1.0), ratio=(3 / 4, 4 / 3)):
    h, w = img.shape[-2:]
    area = h * w
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
        aspect = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
        cw = int(round(math.sqrt(target_area * aspect)))
        ch = int(round(math.sqrt(target_area / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            i = torch.randint(0, h - ch + 1, size=(1,)).item()
            j = torch.randint(0, w - cw + 1, size=(1,)).item()
            return i, j, ch, cw
    return 0, 0, h, w


def rgb_to_grayscale(img):
    r, g, b = img.unbind(dim=-3)
    gray = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype)
    return gray.unsqueeze(dim=-3)


def _blend(img1, img2, ratio):
    bound = 1.0 if img1.is_floating_point() else 255.0
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)


def adjust_brightness(img, factor):
    return _blend(img, torch.zeros_like(img), factor)


def adjust_contrast(img, factor):
    mean = torch.mean(rgb_to_grayscale(img).to(torch.float32), dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, factor)


def adjust_saturation(img, factor):
    return _blend(img, rgb_to_grayscale(img), factor)


def posterize(img, bits):
    mask = -int(2 ** (8 - bits))
    return img & mask


def solarize(img, threshold):
    return torch.where(img >= threshold, 255 - img, img)


def gaussian_blur(img, kernel_size=5, sigma=1.2):
    half = (kernel_size - 1) * 0.5
    x = torch.linspace(-half, half, steps=kernel_size)
    pdf = torch.exp(-0.5 * (x / sigma).pow(2))
    k1d = pdf / pdf.sum()
    kernel = torch.mm(k1d[:, None], k1d[None, :])
    kernel = kernel.expand(img.shape[-3], 1, kernel_size, kernel_size)
    x = img.unsqueeze(0).to(torch.float32)
    pad = kernel_size // 2
    x = F.pad(x, [pad, pad, pad, pad], mode="reflect")
    out = F.conv2d(x, kernel, groups=img.shape[-3])
    return out.round().clamp(0, 255).to(torch.uint8).squeeze(0)


def convert_image_dtype(img):
    return img.to(torch.float32) / 255.0


def normalize(t, mean, std):
    mean = torch.as_tensor(mean, dtype=t.dtype).view(-1, 1, 1)
    std = torch.as_tensor(std, dtype=t.dtype).view(-1, 1, 1)
    return (t - mean) / std


img = make_image()
print("image", img.shape, img.dtype, int(img.sum()), img[:, 0, :4].tolist())
for mode in ["bilinear", "bicubic"]:
    for aa in [True, False]:
        r = resize(img, 24, antialias=aa, interpolation=mode)
        print(f"resize {mode} aa={aa}", r.shape, r.dtype, int(r.long().sum()), r[1, 5, :6].tolist())
r_float = resize(img.float(), 24)
r_uint8 = resize(img, 24)
diff = (r_float.round() - r_uint8.float()).abs()
print("uint8 vs float path: max diff", diff.max().item())
near = F.interpolate(img[None], scale_factor=0.5, mode="nearest")[0]
print("nearest", near.shape, int(near.long().sum()))
cc = center_crop(resize(img, 28), 24)
print("center crop", cc.shape, int(cc.long().sum()))
i, j, h, w = random_resized_crop_params(img)
rrc = F.interpolate(img[None, :, i:i + h, j:j + w], size=(24, 24), mode="bilinear",
                    antialias=True)[0]
print("random resized crop", (i, j, h, w), int(rrc.long().sum()))
print("hflip", torch.equal(img.flip(-1)[..., 0], img[..., -1]))
gray = rgb_to_grayscale(img)
print("gray", gray.shape, gray.dtype, int(gray.long().sum()))
for name, out in [("brightness", adjust_brightness(img, 1.3)),
                  ("contrast", adjust_contrast(img, 0.6)),
                  ("saturation", adjust_saturation(img, 1.8)),
                  ("posterize", posterize(img, 3)), ("solarize", solarize(img, 160)),
                  ("blur", gaussian_blur(img))]:
    print(f"{name:10s}", out.dtype, int(out.long().sum()), out[0, 3, :5].tolist())
t = normalize(convert_image_dtype(cc), [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
print("normalized", t.dtype, round(t.mean().item(), 5), round(t.std().item(), 5))


class SyntheticImages(Dataset):
    def __init__(self, n):
        self.labels = torch.randint(0, 2, (n,)).tolist()
        # class 1: red and blue swapped
        self.images = [make_image()[[2, 1, 0] if c else [0, 1, 2]] for c in self.labels]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        im = self.images[idx]
        i, j, h, w = random_resized_crop_params(im)
        im = F.interpolate(im[None, :, i:i + h, j:j + w], size=(16, 16), mode="bilinear",
                           antialias=True)[0]
        if torch.rand(1) < 0.5:
            im = im.flip(-1)
        im = adjust_brightness(im, float(torch.empty(1).uniform_(0.8, 1.2)))
        x = normalize(convert_image_dtype(im), [0.5] * 3, [0.25] * 3)
        return x, self.labels[idx]


ds = SyntheticImages(12)
print("labels", ds.labels)
loader = DataLoader(ds, batch_size=4, shuffle=True)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(3):
    total = 0.0
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * xb.shape[0]
    print(f"epoch {epoch} loss {total / len(ds):.5f}", xb.shape, yb.dtype)
