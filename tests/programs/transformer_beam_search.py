"""A seq2seq nn.Transformer (encoder-decoder) trained on a toy reversal task with teacher
forcing: sinusoidal positional encoding buffer, generate_square_subsequent_mask, key padding
masks, label-smoothed cross entropy ignoring padding, Noam warmup through LambdaLR; then greedy
decoding and beam search with topk, gather, length penalty and finished-hypothesis bookkeeping
(encode once, model.decoder per step)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
PAD, BOS, EOS, VOCAB = 0, 1, 2, 10
D_MODEL = 16


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=50):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):                     # x: (B, T, D), batch_first
        x = x + self.pe[: x.size(1)].transpose(0, 1)
        return self.dropout(x)


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        self.pos = PositionalEncoding(D_MODEL, dropout=0.0)
        self.transformer = nn.Transformer(
            d_model=D_MODEL, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
            dim_feedforward=32, dropout=0.0, batch_first=True,
        )
        self.generator = nn.Linear(D_MODEL, VOCAB)

    def encode(self, src, src_pad):
        x = self.pos(self.src_emb(src) * math.sqrt(D_MODEL))
        return self.transformer.encoder(x, src_key_padding_mask=src_pad)

    def decode(self, tgt, memory, src_pad):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        y = self.pos(self.tgt_emb(tgt) * math.sqrt(D_MODEL))
        out = self.transformer.decoder(y, memory, tgt_mask=tgt_mask,
                                       memory_key_padding_mask=src_pad)
        return self.generator(out)

    def forward(self, src, tgt):
        src_pad = src == PAD
        tgt_pad = tgt == PAD
        tgt_mask = self.transformer.generate_square_subsequent_mask(tgt.size(1))
        s = self.pos(self.src_emb(src) * math.sqrt(D_MODEL))
        t = self.pos(self.tgt_emb(tgt) * math.sqrt(D_MODEL))
        out = self.transformer(s, t, tgt_mask=tgt_mask, src_key_padding_mask=src_pad,
                               tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return self.generator(out)


def make_batch(n):
    lengths = torch.randint(2, 6, (n,))
    T = int(lengths.max())
    src = torch.full((n, T), PAD)
    tgt = torch.full((n, T + 2), PAD)
    for i, L in enumerate(lengths.tolist()):
        seq = torch.randint(3, VOCAB, (L,))
        src[i, :L] = seq
        tgt[i, 0] = BOS
        tgt[i, 1:L + 1] = seq.flip(0)
        tgt[i, L + 1] = EOS
    return src, tgt


print(nn.Transformer.generate_square_subsequent_mask(4))
model = Seq2Seq()
for p in model.parameters():
    if p.dim() > 1:
        nn.init.xavier_uniform_(p)
print(sum(p.numel() for p in model.parameters()))
opt = torch.optim.Adam(model.parameters(), lr=0.3, betas=(0.9, 0.98), eps=1e-9)
warmup = 20
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda step: D_MODEL ** -0.5 * min((step + 1) ** -0.5, (step + 1) * warmup ** -1.5)
)
crit = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
for step in range(80):
    src, tgt = make_batch(16)
    logits = model(src, tgt[:, :-1])
    loss = crit(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    if step % 20 == 19:
        print(step, f"{loss.item():.4f}", f"{sched.get_last_lr()[0]:.6f}")


@torch.no_grad()
def greedy(model, src, max_len=8):
    src_pad = src == PAD
    memory = model.encode(src, src_pad)
    ys = torch.full((src.size(0), 1), BOS)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(ys, memory, src_pad)[:, -1]
        nxt = logits.argmax(-1)
        nxt = nxt.masked_fill(done, PAD)
        ys = torch.cat([ys, nxt.unsqueeze(1)], dim=1)
        done |= nxt == EOS
        if done.all():
            break
    return ys


@torch.no_grad()
def beam_search(model, src, beam=3, max_len=8, alpha=0.6):
    """One source sentence (1, S); returns the best hypotheses with their scores."""
    src_pad = src == PAD
    memory = model.encode(src, src_pad)
    hyps = torch.full((1, 1), BOS)
    scores = torch.zeros(1)
    finished = []
    for _ in range(max_len):
        k = hyps.size(0)
        logp = F.log_softmax(model.decode(hyps, memory.expand(k, -1, -1),
                                          src_pad.expand(k, -1))[:, -1], dim=-1)
        cand = (scores.unsqueeze(1) + logp).view(-1)
        top_scores, top_idx = cand.topk(beam)
        origin = torch.div(top_idx, VOCAB, rounding_mode="floor")
        token = top_idx % VOCAB
        hyps = torch.cat([hyps.index_select(0, origin), token.unsqueeze(1)], dim=1)
        scores = top_scores
        ended = token == EOS
        for h, s in zip(hyps[ended], scores[ended]):
            penalty = ((5 + h.size(0) - 1) / 6) ** alpha
            finished.append((s.item() / penalty, h[1:-1].tolist()))
        keep = ~ended
        if not keep.any() or len(finished) >= beam:
            break
        hyps, scores = hyps[keep], scores[keep]
    finished.sort(key=lambda t: -t[0])
    return finished[:beam]


model.eval()
src, tgt = make_batch(4)
with torch.no_grad():      # inference: torch's encoder leaves padded positions at norm(0)
    mem = model.encode(src, src == PAD)
    bias = model.transformer.encoder.norm.bias
print(mem.shape, torch.allclose(mem[src == PAD], bias.expand(int((src == PAD).sum()), -1)))
out = greedy(model, src)
print(src.tolist())
print(out.tolist())
for i in range(2):
    L = int((src[i] != PAD).sum())
    res = beam_search(model, src[i:i + 1, :L])
    print([(round(s, 4), seq) for s, seq in res], src[i, :L].flip(0).tolist())
# gather the probability the model gives each gold token
with torch.no_grad():
    logp = F.log_softmax(model(src, tgt[:, :-1]), -1)
    tok_lp = logp.gather(2, tgt[:, 1:].unsqueeze(-1)).squeeze(-1)
    tok_lp = tok_lp.masked_fill(tgt[:, 1:] == PAD, 0.0)
print([round(v, 3) for v in tok_lp.sum(1).tolist()])
