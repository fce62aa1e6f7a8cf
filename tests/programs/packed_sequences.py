"""Variable-length sequences the way NLP homework handles them: pad_sequence / pack_sequence /
pack_padded_sequence with enforce_sorted=False through a 2-layer bidirectional LSTM and a GRU,
pad_packed_sequence with total_length, the final hidden states of both directions, a masked
token loss with ignore_index and label_smoothing, nn.Embedding with padding_idx, max_norm and
from_pretrained(freeze=False), and unpack_sequence / unpad_sequence round trips."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import (pack_padded_sequence, pack_sequence, pad_packed_sequence,
                                pad_sequence, unpack_sequence, unpad_sequence)

torch.manual_seed(0)
PAD = 0
vocab, emb_dim, hid, n_tags = 15, 8, 6, 4
lengths = [5, 2, 7, 3]
seqs = [torch.randint(1, vocab, (n,)) for n in lengths]
tags = [torch.randint(0, n_tags, (n,)) for n in lengths]

padded = pad_sequence(seqs, batch_first=True, padding_value=PAD)
padded_tags = pad_sequence(tags, batch_first=True, padding_value=-100)
print("padded", tuple(padded.shape), padded[1].tolist(), padded_tags[1].tolist())
print("padding_side left", pad_sequence(seqs, batch_first=True, padding_side="left")[1].tolist())

packed = pack_sequence(seqs, enforce_sorted=False)
print("batch_sizes", packed.batch_sizes.tolist())
print("sorted_indices", packed.sorted_indices.tolist(),
      "unsorted", packed.unsorted_indices.tolist())
print("data", packed.data.tolist())
print("unpack", [s.tolist() for s in unpack_sequence(packed)] == [s.tolist() for s in seqs])


class Tagger(nn.Module):
    def __init__(self, pretrained=None):
        super().__init__()
        if pretrained is None:
            self.emb = nn.Embedding(vocab, emb_dim, padding_idx=PAD, max_norm=1.0)
        else:
            self.emb = nn.Embedding.from_pretrained(pretrained, freeze=False, padding_idx=PAD)
        self.lstm = nn.LSTM(emb_dim, hid, num_layers=2, bidirectional=True, batch_first=True,
                            dropout=0.0)
        self.out = nn.Linear(2 * hid, n_tags)

    def forward(self, x, lens):
        packed = pack_padded_sequence(self.emb(x), lens, batch_first=True, enforce_sorted=False)
        packed_out, (h, c) = self.lstm(packed)
        out, out_lens = pad_packed_sequence(packed_out, batch_first=True,
                                            total_length=x.size(1))
        # last layer, forward and backward final states, in the original batch order
        sent = torch.cat([h[-2], h[-1]], dim=-1)
        return self.out(out), sent, out_lens


lens = torch.tensor(lengths)
model = Tagger()
logits, sent, out_lens = model(padded, lens)
print("logits", tuple(logits.shape), "sent", tuple(sent.shape), "lens", out_lens.tolist())
print("pad positions are zero", bool((logits[1, 2:] == model.out.bias).all()))
# the forward direction's final state is the output at the last real step
o, (h, c) = model.lstm(pack_padded_sequence(model.emb(padded), lens, batch_first=True,
                                           enforce_sorted=False))
o, _ = pad_packed_sequence(o, batch_first=True)
print("final states", torch.allclose(o[torch.arange(4), lens - 1, :hid], h[-2], atol=1e-6),
      torch.allclose(o[:, 0, hid:], h[-1], atol=1e-6), tuple(c.shape))
print("emb rows renormed", [round(r, 4) for r in model.emb.weight.norm(dim=1)[:6].tolist()])

opt = torch.optim.Adam(model.parameters(), lr=0.02)
for step in range(6):
    logits, sent, _ = model(padded, lens)
    loss = F.cross_entropy(logits.reshape(-1, n_tags), padded_tags.reshape(-1),
                           ignore_index=-100, label_smoothing=0.1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    acc = ((logits.argmax(-1) == padded_tags) & (padded_tags != -100)).sum() / lens.sum()
    print(f"step {step} loss {loss.item():.6f} acc {acc.item():.4f}")
print("padding row grad", model.emb.weight.grad[PAD].abs().sum().item())

# per-token losses masked by hand equal the ignore_index loss without smoothing
tok = F.cross_entropy(logits.transpose(1, 2), padded_tags.clamp(min=0), reduction="none")
mask = padded_tags != -100
manual = (tok * mask).sum() / mask.sum()
print("manual mask", torch.allclose(manual, F.cross_entropy(logits.transpose(1, 2), padded_tags)))

# a GRU over the same packed batch, sorted by hand, and unpadding its outputs
gru = nn.GRU(emb_dim, hid, batch_first=False)
embedded = [model.emb(s).detach() for s in seqs]
order = sorted(range(len(seqs)), key=lambda i: -lengths[i])
packed_sorted = pack_sequence([embedded[i] for i in order])
out, h = gru(packed_sorted)
padded_out, plens = pad_packed_sequence(out)
print("gru", tuple(padded_out.shape), plens.tolist(), tuple(h.shape))
pieces = unpad_sequence(padded_out, plens)
print("unpad", [tuple(p.shape) for p in pieces],
      torch.allclose(pieces[0][-1], h[0, 0], atol=1e-6))
try:
    pack_sequence(embedded)
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])

# from_pretrained: frozen vs trainable copies of the same vectors
vectors = torch.randn(vocab, emb_dim)
frozen = nn.Embedding.from_pretrained(vectors)
print("frozen", frozen.weight.requires_grad, "trainable",
      Tagger(vectors).emb.weight.requires_grad)
print("lookup", [round(v, 5) for v in frozen(torch.tensor([3]))[0, :3].tolist()])
