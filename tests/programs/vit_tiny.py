"""A tiny vision transformer: patch embedding by Conv2d and by unfold, class token,
learned positions, pre-norm blocks with MultiheadAttention (batch_first), GELU MLP,
causal SDPA, cosine warmup by LambdaLR, gradient accumulation."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(4)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.n1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.n2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(
            nn.Linear(d, 2 * d), nn.GELU(approximate="tanh"), nn.Linear(2 * d, d)
        )

    def forward(self, x):
        h = self.n1(x)
        a, w = self.attn(h, h, h, need_weights=True, average_attn_weights=True)
        x = x + a
        return x + self.mlp(self.n2(x)), w


class ViT(nn.Module):
    def __init__(self, d=16, patch=4, n_cls=3):
        super().__init__()
        self.embed = nn.Conv2d(3, d, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, 17, d) * 0.02)
        self.blocks = nn.ModuleList([Block(d, 2) for _ in range(2)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, n_cls)

    def forward(self, img):
        t = self.embed(img).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], dim=1) + self.pos
        for b in self.blocks:
            t, w = b(t)
        return self.head(self.norm(t[:, 0])), w


img = torch.randn(6, 3, 16, 16)
labels = torch.tensor([0, 1, 2, 0, 1, 2])
model = ViT()
patches = F.unfold(img, kernel_size=4, stride=4)
print(
    patches.shape,
    torch.allclose(
        model.embed(img).flatten(2),
        model.embed.weight.view(16, -1) @ patches + model.embed.bias[:, None],
        atol=1e-5,
    ),
)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95))
warm = 3
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / 5))
)
for step in range(8):
    opt.zero_grad()
    for xb, yb in zip(img.chunk(2), labels.chunk(2)):
        logits, w = model(xb)
        (F.cross_entropy(logits, yb) / 2).backward()
    opt.step()
    sched.step()
    print(
        step,
        round(logits.log_softmax(-1).mean().item(), 5),
        w.shape,
        round(sched.get_last_lr()[0], 6),
    )
q = torch.randn(2, 2, 5, 8)
k = torch.randn(2, 2, 5, 8)
v = torch.randn(2, 2, 5, 8)
out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
mask = torch.ones(5, 5, dtype=torch.bool).tril()
ref = (
    torch.softmax((q @ k.transpose(-2, -1) / math.sqrt(8)).masked_fill(~mask, float("-inf")), -1)
    @ v
)
print(torch.allclose(out, ref, atol=1e-5), out[0, 0, -1])
