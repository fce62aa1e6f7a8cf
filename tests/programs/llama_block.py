"""A tiny LLaMA-style decoder as people write it after nanoGPT / llama repos: RMSNorm by hand
and nn.RMSNorm, SwiGLU feed-forward, rotary embeddings both as complex numbers (polar,
view_as_complex, view_as_real) and as the cos/sin rotate_half form, grouped-query attention
with repeat_interleave, scaled_dot_product_attention(is_causal=True) checked against an explicit
triu mask, weight tying, AdamW with decay / no-decay parameter groups, a cosine schedule with
warmup through LambdaLR, clip_grad_norm_, and top-k / top-p sampling."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 32
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    vocab_size: int = 28
    multiple_of: int = 16
    norm_eps: float = 1e-5
    max_seq_len: int = 16


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_kv_heads = args.n_kv_heads
        self.n_heads = args.n_heads
        self.n_rep = self.n_heads // self.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x, freqs_cis):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        keys = torch.repeat_interleave(xk, dim=2, repeats=self.n_rep)
        values = xv.repeat_interleave(self.n_rep, dim=2)
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        output = F.scaled_dot_product_attention(xq, keys, values, is_causal=True)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden_dim: int, multiple_of: int):
        super().__init__()
        hidden_dim = int(2 * hidden_dim / 3)
        hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, layer_id: int, args: ModelArgs):
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args.dim, 4 * args.dim, args.multiple_of)
        self.layer_id = layer_id
        self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
        self.ffn_norm = nn.RMSNorm(args.dim, eps=args.norm_eps)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, params: ModelArgs):
        super().__init__()
        self.params = params
        self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
        self.layers = torch.nn.ModuleList()
        for layer_id in range(params.n_layers):
            self.layers.append(TransformerBlock(layer_id, params))
        self.norm = RMSNorm(params.dim, eps=params.norm_eps)
        self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
        self.tok_embeddings.weight = self.output.weight
        self.register_buffer("freqs_cis", precompute_freqs_cis(
            params.dim // params.n_heads, params.max_seq_len * 2), persistent=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("w3.weight") or pn.endswith("wo.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * params.n_layers))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, tokens, targets=None):
        _bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        freqs_cis = self.freqs_cis[:seqlen]
        for layer in self.layers:
            h = layer(h, freqs_cis)
        h = self.norm(h)
        if targets is not None:
            logits = self.output(h)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        else:
            logits = self.output(h[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        num_decay = sum(p.numel() for p in decay_params)
        num_nodecay = sum(p.numel() for p in nodecay_params)
        print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay:,} parameters")
        print(f"num non-decayed parameter tensors: {len(nodecay_params)}, "
              f"with {num_nodecay:,} parameters")
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, fused=False)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None):
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -self.params.max_seq_len:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            if top_p is not None:
                sorted_logits, sorted_indices = torch.sort(logits, descending=True)
                cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
                sorted_indices_to_remove = cumulative_probs > top_p
                sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
                sorted_indices_to_remove[..., 0] = 0
                indices_to_remove = sorted_indices_to_remove.scatter(
                    1, sorted_indices, sorted_indices_to_remove)
                logits = logits.masked_fill(indices_to_remove, float("-inf"))
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


torch.manual_seed(1337)
args = ModelArgs()

# the two rotary forms agree (the cos/sin form on the half-split layout)
hd = args.dim // args.n_heads
q = torch.randn(2, 5, args.n_heads, hd)
k = torch.randn(2, 5, args.n_kv_heads, hd)
fc = precompute_freqs_cis(hd, 5)
qr, kr = apply_rotary_emb(q, k, fc)
inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
freqs = torch.einsum("i,j->ij", torch.arange(5).float(), inv_freq)
emb = torch.cat((freqs, freqs), dim=-1)
cos, sin = emb.cos()[None, :, None, :], emb.sin()[None, :, None, :]
perm = torch.cat([torch.arange(0, hd, 2), torch.arange(1, hd, 2)])
qh, kh = apply_rotary_pos_emb(q[..., perm], k[..., perm], cos, sin)
print("rope forms agree:", torch.allclose(qh, qr[..., perm], atol=1e-6),
      torch.allclose(kh, kr[..., perm], atol=1e-6))
print("freqs_cis", fc.dtype, tuple(fc.shape), f"{fc.abs().mean().item():.6f}",
      f"{fc.angle()[4, 1].item():.6f}")

# hand-written RMSNorm equals nn.RMSNorm; SDPA(is_causal) equals an explicit triu mask
x = torch.randn(3, 7, args.dim)
mine, ref = RMSNorm(args.dim, eps=1e-5), nn.RMSNorm(args.dim, eps=1e-5)
print("rmsnorm agree:", torch.allclose(mine(x), ref(x), atol=1e-6))
qq, kk, vv = torch.randn(3, 2, 7, 8).unbind(0)
mask = torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1)
att = (qq @ kk.transpose(-2, -1)) / math.sqrt(8)
att = att.masked_fill(mask, float("-inf")).softmax(-1)
print("sdpa causal agree:", torch.allclose(att @ vv, F.scaled_dot_product_attention(
    qq, kk, vv, is_causal=True), atol=1e-6))

# data: a repeating character stream
text = "the quick brown fox jumps over the lazy dog. "
chars = sorted(set(text))
assert len(chars) <= args.vocab_size
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text * 6], dtype=torch.long)


def get_batch(batch_size=8):
    ix = torch.randint(len(data) - args.max_seq_len, (batch_size,))
    xb = torch.stack([data[i:i + args.max_seq_len] for i in ix])
    yb = torch.stack([data[i + 1:i + 1 + args.max_seq_len] for i in ix])
    return xb, yb


model = Transformer(args)
n_params = sum(p.numel() for p in model.parameters())
print(f"number of parameters: {n_params / 1e3:.2f}K", model.tok_embeddings.weight
      is model.output.weight)
optimizer = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
warmup_iters, max_iters, min_lr_ratio = 5, 30, 0.1


def lr_lambda(it):
    if it < warmup_iters:
        return (it + 1) / (warmup_iters + 1)
    decay_ratio = (it - warmup_iters) / (max_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * min(decay_ratio, 1.0)))
    return min_lr_ratio + coeff * (1 - min_lr_ratio)


scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
model.train()
for it in range(max_iters):
    xb, yb = get_batch()
    _, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    if it % 6 == 0 or it == max_iters - 1:
        print(f"iter {it:3d} loss {loss.item():.4f} norm {norm.item():.4f} "
              f"lr {scheduler.get_last_lr()[0]:.6f}")

model.eval()
with torch.no_grad():
    xb, yb = get_batch(4)
    _, val = model(xb, yb)
print(f"val loss {val.item():.4f}")
start = torch.tensor([[stoi["t"], stoi["h"], stoi["e"]]])
torch.manual_seed(7)
greedy_like = model.generate(start, 10, temperature=0.01)
sampled_k = model.generate(start, 10, temperature=1.0, top_k=5)
sampled_p = model.generate(start, 10, temperature=0.8, top_p=0.9)
itos = {i: c for c, i in stoi.items()}
for name, out in [("greedy", greedy_like), ("top_k", sampled_k), ("top_p", sampled_p)]:
    print(name, repr("".join(itos[int(i)] for i in out[0])))
