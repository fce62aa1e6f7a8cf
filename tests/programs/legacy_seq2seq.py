"""Old-style PyTorch (0.3/0.4 era) code: Variable, FloatTensor/LongTensor constructors, .data,
.type(), apply_; a GRU encoder-decoder with teacher forcing on a sequence-reversal task, gradient
clipping and ReduceLROnPlateau."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

torch.manual_seed(0)
random.seed(0)
dtype = torch.FloatTensor
V, H, T = 6, 16, 5                        # tokens 0 (SOS), 1..5; sequences of length T
SOS = 0


def batch(n):
    seqs = torch.LongTensor(n, T).copy_(torch.randint(1, V, (n, T)))
    return Variable(seqs), Variable(seqs.flip(1))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.gru = nn.GRU(H, H, batch_first=True)

    def forward(self, x):
        return self.gru(self.emb(x))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.cell = nn.GRUCell(2 * H, H)
        self.out = nn.Linear(H, V)

    def forward(self, tok, h, enc):
        scores = torch.bmm(enc, h.unsqueeze(2)).squeeze(2)          # dot attention
        ctx = (F.softmax(scores, dim=1).unsqueeze(2) * enc).sum(1)
        h = self.cell(torch.cat([self.emb(tok), ctx], 1), h)
        return F.log_softmax(self.out(h), dim=1), h


enc, dec = Encoder(), Decoder()
params = list(enc.parameters()) + list(dec.parameters())
opt = torch.optim.Adam(params, lr=0.01)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
teacher = random.Random(1)

for epoch in range(8):
    src, tgt = batch(32)
    enc_out, h = enc(src)
    h = h[0]
    tok = Variable(torch.LongTensor(32).fill_(SOS))
    loss = 0
    for t in range(T):
        logp, h = dec(tok, h, enc_out)
        loss = loss + F.nll_loss(logp, tgt[:, t])
        tok = tgt[:, t] if teacher.random() < 0.5 else logp.data.max(1)[1]
    opt.zero_grad()
    loss.backward()
    norm = nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    sched.step(loss.data.item())
    print("epoch {} loss {:.4f} norm {:.4f} lr {:.4f}".format(
        epoch, loss.data.item() / T, float(norm), opt.param_groups[0]["lr"]))

# legacy types and conversions
w = enc.emb.weight.data
print(w.type(), isinstance(w, torch.FloatTensor), isinstance(w, torch.DoubleTensor))
d = w.type(torch.DoubleTensor)
print(d.type(), d.shape == w.shape, w.type("torch.LongTensor").dtype)
mask = torch.ByteTensor([1, 0, 1]).bool()
print(torch.FloatTensor([1, 2, 3])[mask].tolist(), torch.Tensor(2, 3).shape)
scaled = dtype([0.5, -1.5, 2.0]).apply_(lambda v: round(v * 2) / 2)
print(scaled.tolist(), torch.IntTensor([7, 8]).map_(torch.IntTensor([1, 2]), lambda a, b: a * b))
with torch.no_grad():
    src, tgt = batch(4)
    enc_out, h = enc(src)
    h, tok, outs = h[0], torch.zeros(4).type(torch.LongTensor), []
    for _ in range(T):
        logp, h = dec(tok, h, enc_out)
        tok = logp.argmax(1)
        outs.append(tok)
    acc = (torch.stack(outs, 1) == tgt).float().mean().item()
print(f"greedy acc {acc:.3f}")
