"""Seq2seq with Bahdanau attention, teacher forcing and greedy/beam decoding."""

import random
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(4)
random.seed(4)
V, H, SOS, EOS = 12, 16, 0, 1
pairs = [(torch.randint(2, V, (5,)),) for _ in range(8)]
pairs = [(s, torch.flip(s, [0])) for (s,) in pairs]


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.gru = nn.GRU(H, H, batch_first=True)

    def forward(self, src):
        return self.gru(self.emb(src))


class AttnDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.Wa, self.Ua, self.va = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, 1)
        self.gru = nn.GRU(2 * H, H, batch_first=True)
        self.out = nn.Linear(H, V)

    def forward(self, tok, hidden, enc_out):
        scores = self.va(torch.tanh(self.Wa(hidden.transpose(0, 1)) + self.Ua(enc_out)))
        weights = F.softmax(scores.squeeze(2), dim=-1).unsqueeze(1)
        context = torch.bmm(weights, enc_out)
        inp = torch.cat([self.emb(tok), context], dim=2)
        out, hidden = self.gru(inp, hidden)
        return F.log_softmax(self.out(out.squeeze(1)), dim=-1), hidden, weights


enc, dec = Encoder(), AttnDecoder()
params = list(enc.parameters()) + list(dec.parameters())
opt = torch.optim.Adam(params, lr=0.01)
src = torch.stack([p[0] for p in pairs])
tgt = torch.stack([p[1] for p in pairs])
for epoch in range(6):
    enc_out, h = enc(src)
    tok = torch.full((len(pairs), 1), SOS, dtype=torch.long)
    loss = 0.0
    for t in range(tgt.size(1)):
        logp, h, _ = dec(tok, h, enc_out)
        loss = loss + F.nll_loss(logp, tgt[:, t])
        teacher = random.random() < 0.5
        tok = tgt[:, t : t + 1] if teacher else logp.argmax(1, keepdim=True).detach()
    opt.zero_grad()
    loss.backward()
    total = nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    opt.step()
    print(epoch, round(loss.item() / tgt.size(1), 5), round(total.item(), 5))


@torch.no_grad()
def beam_search(s, k=3, steps=5):
    enc_out, h = enc(s.unsqueeze(0))
    beams = [(0.0, [SOS], h)]
    for _ in range(steps):
        cand = []
        for score, seq, hid in beams:
            logp, nh, w = dec(torch.tensor([[seq[-1]]]), hid, enc_out)
            top_v, top_i = logp[0].topk(k)
            for v, i in zip(top_v.tolist(), top_i.tolist()):
                cand.append((score + v, seq + [i], nh))
        beams = sorted(cand, key=lambda c: c[0], reverse=True)[:k]
    return beams[0][1][1:], round(beams[0][0], 4)


print(beam_search(src[0]), tgt[0].tolist())
print(sum(p.numel() for p in params), enc)
