"""Sequence classification with a bidirectional GRU over packed variable-length sequences."""

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

torch.manual_seed(11)
lengths = torch.tensor([7, 5, 4, 2])
seqs = [torch.randint(1, 20, (int(n),)) for n in lengths]
labels = torch.tensor([0, 1, 1, 0])
padded = pad_sequence(seqs, batch_first=True)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 12, padding_idx=0)
        self.gru = nn.GRU(12, 16, num_layers=2, batch_first=True, bidirectional=True, dropout=0.2)
        self.out = nn.Linear(32, 2)

    def forward(self, x, lens):
        packed = pack_padded_sequence(self.emb(x), lens, batch_first=True, enforce_sorted=False)
        out, h = self.gru(packed)
        unpacked, ul = pad_packed_sequence(out, batch_first=True)
        feat = torch.cat([h[-2], h[-1]], dim=1)
        return self.out(feat), unpacked, ul


model = Classifier()
opt = torch.optim.RMSprop(model.parameters(), lr=5e-3, momentum=0.5)
for step in range(8):
    opt.zero_grad()
    logits, unpacked, ul = model(padded, lengths)
    loss = nn.functional.cross_entropy(logits, labels)
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 5))
print(unpacked.shape, ul, unpacked[3, 2:].abs().sum().item())
model.eval()
with torch.inference_mode():
    print(model(padded, lengths)[0].softmax(-1))
lstm = nn.LSTM(12, 8, batch_first=True, proj_size=4)
o, (h, c) = lstm(torch.randn(2, 5, 12))
print(o.shape, h.shape, c.shape)
cell = nn.LSTMCell(3, 5)
hx, cx = torch.zeros(2, 5), torch.zeros(2, 5)
for t in range(3):
    hx, cx = cell(torch.ones(2, 3) * t, (hx, cx))
print(hx[0])
