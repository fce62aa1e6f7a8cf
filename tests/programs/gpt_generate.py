"""A tiny decoder-only language model (nanoGPT style) and a seq2seq nn.Transformer: causal
masks, key padding masks, nn.MultiheadAttention with need_weights, weight tying, and
generation loops with temperature, top-k, top-p sampling and greedy decoding."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
text = "hello world, hello there. the world is small and the hello is loud. "
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
itos = {i: c for c, i in stoi.items()}
encode = lambda s: [stoi[c] for c in s]  # noqa: E731
decode = lambda ids: "".join(itos[i] for i in ids)  # noqa: E731
data = torch.tensor(encode(text * 4), dtype=torch.long)
V, BLOCK, D = len(chars), 16, 32


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(D, 3 * D)
        self.c_proj = nn.Linear(D, D)
        self.n_head = 4
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(D, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * D, D), nn.Dropout(0.1))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Embedding(BLOCK, D)
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, V, bias=False)
        self.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * 2))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= BLOCK else idx[:, -BLOCK:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def get_batch(bs=8):
    ix = torch.randint(len(data) - BLOCK, (bs,))
    x = torch.stack([data[i:i + BLOCK] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + BLOCK] for i in ix])
    return x, y


model = GPT()
print("params", sum(p.numel() for p in model.parameters()),
      model.wte.weight is model.lm_head.weight)
decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": nodecay, "weight_decay": 0.0}], lr=3e-3, betas=(0.9, 0.95))
for it in range(12):
    xb, yb = get_batch()
    _, loss = model(xb, yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if it % 4 == 0:
        print(it, round(loss.item(), 4))
model.eval()
ctx = torch.tensor([encode("hello")], dtype=torch.long)
print(repr(decode(model.generate(ctx, 20, temperature=0.8, top_k=5)[0].tolist())))


def top_p_filter(logits, top_p=0.9):
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
    sorted_indices_to_remove = cumulative_probs > top_p
    sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
    sorted_indices_to_remove[..., 0] = 0
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                         sorted_indices_to_remove)
    return logits.masked_fill(indices_to_remove, float("-inf"))


with torch.no_grad():
    idx = ctx.clone()
    for _ in range(10):
        logits = model(idx[:, -BLOCK:])[0][:, -1, :]
        filtered = top_p_filter(logits, 0.8)
        nxt = torch.multinomial(F.softmax(filtered, dim=-1), 1)
        idx = torch.cat([idx, nxt], 1)
    print("top-p", repr(decode(idx[0].tolist())), int(torch.isinf(filtered).sum()))
    greedy = ctx.clone()
    for _ in range(10):
        greedy = torch.cat([greedy, model(greedy[:, -BLOCK:])[0][:, -1:].argmax(-1)], 1)
    print("greedy", repr(decode(greedy[0].tolist())))

# seq2seq with nn.Transformer: reverse a padded sequence
PAD, BOS = 0, 1
tr = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                    dim_feedforward=32, dropout=0.0, batch_first=True)
emb = nn.Embedding(8, 16, padding_idx=PAD)
head = nn.Linear(16, 8)
params = list(tr.parameters()) + list(emb.parameters()) + list(head.parameters())
opt2 = torch.optim.Adam(params, lr=5e-3)
src = torch.randint(2, 8, (6, 5))
src[3:, 4] = PAD
tgt = torch.cat([torch.full((6, 1), BOS), src.flip(1)], 1)
src_pad = src == PAD
tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1))
print(causal.dtype, causal[1].tolist())
for _ in range(10):
    out = tr(emb(src), emb(tgt_in), tgt_mask=causal, src_key_padding_mask=src_pad,
             tgt_key_padding_mask=tgt_in == PAD, memory_key_padding_mask=src_pad)
    loss = F.cross_entropy(head(out).reshape(-1, 8), tgt_out.reshape(-1), ignore_index=PAD)
    opt2.zero_grad()
    loss.backward()
    opt2.step()
print("s2s loss", round(loss.item(), 4))
tr.eval()
with torch.no_grad():
    memory = tr.encoder(emb(src), src_key_padding_mask=src_pad)
    ys = torch.full((6, 1), BOS)
    for _ in range(5):
        m = nn.Transformer.generate_square_subsequent_mask(ys.size(1))
        o = tr.decoder(emb(ys), memory, tgt_mask=m, memory_key_padding_mask=src_pad,
                       tgt_is_causal=True)
        ys = torch.cat([ys, head(o[:, -1]).argmax(-1, keepdim=True)], 1)
    print(ys[:, 1:].tolist())

mha = nn.MultiheadAttention(16, 4, batch_first=True)
q = torch.randn(2, 3, 16)
kv = torch.randn(2, 5, 16)
kpm = torch.tensor([[False] * 5, [False, False, False, True, True]])
out, w = mha(q, kv, kv, key_padding_mask=kpm)
print(out.shape, w.shape, [round(v, 4) for v in w[1, 0].tolist()])
out, w = mha(q, kv, kv, key_padding_mask=kpm, average_attn_weights=False,
             attn_mask=torch.zeros(3, 5, dtype=torch.bool))
print(w.shape, round(w[1, 2, 0].sum().item(), 4))
out, w = mha(q, q, q, need_weights=False,
             attn_mask=nn.Transformer.generate_square_subsequent_mask(3), is_causal=True)
print(out.shape, w, round(out.abs().mean().item(), 5))
