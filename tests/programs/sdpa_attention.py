"""F.scaled_dot_product_attention the ways model code calls it: a reference implementation
(the one in the docs) compared with the fused call for bool and float masks, is_causal, scale,
grouped-query attention (enable_gqa), dropout_p=0, and gradients of q/k/v; a causal
self-attention block in the nanoGPT style; nn.MultiheadAttention with key_padding_mask,
need_weights / average_attn_weights, and an nn.TransformerDecoder with memory masks."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# Efficient implementation equivalent to the following:
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False) -> torch.Tensor:
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        assert attn_mask is None
        temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))

    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias.masked_fill_(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_mask + attn_bias

    if enable_gqa:
        key = key.repeat_interleave(query.size(-3) // key.size(-3), -3)
        value = value.repeat_interleave(query.size(-3) // value.size(-3), -3)

    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight += attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    attn_weight = torch.dropout(attn_weight, dropout_p, train=True)
    return attn_weight @ value


B, H, L, S, E = 2, 4, 5, 6, 8
q = torch.randn(B, H, L, E, dtype=torch.float64, requires_grad=True)
k = torch.randn(B, H, S, E, dtype=torch.float64, requires_grad=True)
v = torch.randn(B, H, S, E, dtype=torch.float64, requires_grad=True)
bool_mask = torch.rand(L, S) > 0.3
bool_mask[:, 0] = True                       # every query sees at least one key
float_mask = torch.randn(B, 1, L, S, dtype=torch.float64)


def check(name, **kw):
    out = F.scaled_dot_product_attention(q, k, v, **kw)
    ref = scaled_dot_product_attention(q, k, v, **kw)
    go = torch.randn_like(out)
    g = torch.autograd.grad(out, (q, k, v), go)
    gr = torch.autograd.grad(ref, (q, k, v), go)
    print(f"{name:12s}", tuple(out.shape), torch.allclose(out, ref),
          all(torch.allclose(a, b) for a, b in zip(g, gr)), f"{out.sum().item():.8f}")


check("plain")
check("bool mask", attn_mask=bool_mask)
check("float mask", attn_mask=float_mask)
qs = q[:, :, :S]
out_c = F.scaled_dot_product_attention(qs, k, v, is_causal=True)
ref_c = scaled_dot_product_attention(qs, k, v, is_causal=True)
print("causal", torch.allclose(out_c, ref_c), f"{out_c[0, 0, 0].sum().item():.8f}")
check("scale", scale=0.5, attn_mask=bool_mask)
# a padding mask together with is_causal: 4-D inputs combine both masks (torch's CPU flash
# kernel), 3-D ones are refused (its math path)
pad_keep = torch.ones(B, 1, 1, S, dtype=torch.bool)
pad_keep[1, :, :, 4:] = False
both = F.scaled_dot_product_attention(qs, k, v, attn_mask=pad_keep, is_causal=True)
causal_keep = torch.ones(qs.size(-2), S, dtype=torch.bool).tril()
ref_both = F.scaled_dot_product_attention(qs, k, v, attn_mask=pad_keep & causal_keep)
print("mask + causal", torch.allclose(both, ref_both), f"{both[1, 0, 4].sum().item():.8f}")
try:
    F.scaled_dot_product_attention(qs[0], k[0], v[0], attn_mask=causal_keep, is_causal=True)
except RuntimeError as e:
    print("3-D mask + causal: RuntimeError", str(e)[:60])
check("dropout 0", dropout_p=0.0)

# grouped-query attention: 4 query heads share 2 key/value heads
kg, vg = k[:, :2].detach(), v[:, :2].detach()
out_g = F.scaled_dot_product_attention(q, kg, vg, enable_gqa=True)
ref_g = scaled_dot_product_attention(q, kg, vg, enable_gqa=True)
print("gqa", tuple(out_g.shape), torch.allclose(out_g, ref_g))
try:
    F.scaled_dot_product_attention(q, kg, vg)
except RuntimeError as e:
    print("without enable_gqa: RuntimeError", "size of tensor a (4)" in str(e))

# a fully masked row gives NaN in the reference, as in the math backend
full = torch.ones(L, S, dtype=torch.bool)
full[1] = False
masked = F.scaled_dot_product_attention(q, k, v, attn_mask=full)
print("masked row nan", torch.isnan(masked[0, 0, 1]).all().item())


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, bias=False):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs
        return self.c_proj(y)


attn = CausalSelfAttention(16, 4)
x = torch.randn(3, 7, 16)
y = attn(x)
y2 = attn(x[:, :4])
print("causal block", tuple(y.shape), "prefix invariant",
      torch.allclose(y[:, :4], y2, atol=1e-6))
y.pow(2).mean().backward()
print("c_attn grad norm", round(attn.c_attn.weight.grad.norm().item(), 6))

# nn.MultiheadAttention: padding masks and the attention weights it returns
mha = nn.MultiheadAttention(16, 4, batch_first=True)
key_padding_mask = torch.tensor([[False] * 7, [False] * 5 + [True] * 2,
                                 [False] * 3 + [True] * 4])
out, w = mha(x, x, x, key_padding_mask=key_padding_mask)
print("mha", tuple(out.shape), tuple(w.shape), round(w[2, 0, 3:].sum().item(), 6))
out, w = mha(x, x, x, key_padding_mask=key_padding_mask, average_attn_weights=False,
             attn_mask=nn.Transformer.generate_square_subsequent_mask(7))
print("per-head weights", tuple(w.shape), round(w[1, 2, 6, :5].sum().item(), 6),
      [round(t, 5) for t in w[0, 1, 2].tolist()])
out, w = mha(x, x, x, need_weights=False)
print("need_weights=False", w)

# a decoder stack over an encoder memory with padding
dec_layer = nn.TransformerDecoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0,
                                       batch_first=True, norm_first=True)
decoder = nn.TransformerDecoder(dec_layer, num_layers=2)
memory = torch.randn(3, 9, 16)
memory_pad = torch.arange(9).expand(3, 9) >= torch.tensor([[9], [6], [4]])
tgt = torch.randn(3, 5, 16)
tgt_mask = nn.Transformer.generate_square_subsequent_mask(5)
o = decoder(tgt, memory, tgt_mask=tgt_mask, memory_key_padding_mask=memory_pad,
            tgt_is_causal=True)
print("decoder", tuple(o.shape), round(o.std().item(), 5), round(o[1, 2, :3].sum().item(), 5))
memory2 = memory.clone()
memory2[2, 4:] = 100.0            # padded memory positions do not matter
o2 = decoder(tgt, memory2, tgt_mask=tgt_mask, memory_key_padding_mask=memory_pad)
print("padding ignored", torch.allclose(o, o2, atol=1e-5))
