"""A pre-norm attention block with nn.MultiheadAttention, masks and SDPA; one training step."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True, dropout=0.0)
        self.mlp = nn.Sequential(
            nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d)
        )

    def forward(self, x, pad):
        T = x.size(1)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        a, w = self.attn(
            self.ln1(x), self.ln1(x), self.ln1(x), attn_mask=causal, key_padding_mask=pad
        )
        x = x + a
        return x + self.mlp(self.ln2(x)), w


class CausalSelfAttention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf")).softmax(-1)
        print("sdpa matches manual", torch.allclose(y, att @ v, atol=1e-6))
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


x = torch.randn(2, 6, 16)
pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
blk = Block(16, 4)
out, w = blk(x, pad)
print(out.shape, w.shape, w[1, -1])
csa = CausalSelfAttention(16, 4)
y = csa(out)
loss = y.pow(2).mean()
loss.backward()
print("loss", loss.item())
print("grad norms", [round(p.grad.norm().item(), 5) for p in blk.attn.parameters()])
emb = nn.Embedding(10, 8, padding_idx=0)
tok = torch.tensor([[1, 2, 0], [3, 0, 0]])
e = emb(tok)
e.sum().backward()
print("pad row grad", emb.weight.grad[0].abs().sum().item(), emb.weight.grad[1])
pos = torch.arange(6).unsqueeze(1) * torch.exp(torch.arange(0, 16, 2) * (-math.log(10000.0) / 16))
print(torch.cat([pos.sin(), pos.cos()], 1)[3, :4])
