"""A character-level LSTM/GRU language model with nn.Embedding and packed sequences."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

torch.manual_seed(1)
text = "the quick brown fox jumps over the lazy dog. a stitch in time saves nine."
chars = sorted(set(text))
stoi = {c: i + 1 for i, c in enumerate(chars)}          # 0 is padding
itos = {i: c for c, i in stoi.items()}
words = text.split(" ")
seqs = [torch.tensor([stoi[c] for c in w]) for w in words]
lengths = torch.tensor([len(s) for s in seqs])


class CharModel(nn.Module):
    def __init__(self, vocab, emb=8, hidden=16, cell="lstm"):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb, padding_idx=0)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(emb, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(self.embed(x), lengths, batch_first=True,
                                      enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return self.head(out)


for cell in ("lstm", "gru"):
    model = CharModel(len(chars) + 1, cell=cell)
    opt = torch.optim.RMSprop(model.parameters(), lr=0.01)
    padded = pad_sequence(seqs, batch_first=True)
    inputs, targets = padded[:, :-1], padded[:, 1:]
    in_len = (lengths - 1).clamp(min=1)
    loss_fn = nn.CrossEntropyLoss(ignore_index=0)
    for step in range(15):
        opt.zero_grad()
        logits = model(inputs, in_len)
        loss = loss_fn(logits.reshape(-1, logits.size(-1)), targets[:, :logits.size(1)].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 5 == 4:
            print(f"{cell} step {step} loss {loss.item():.5f}")

    # greedy generation from "th"
    model.eval()
    with torch.no_grad():
        ids = [stoi["t"], stoi["h"]]
        for _ in range(5):
            x = torch.tensor([ids])
            logits = model(x, torch.tensor([len(ids)]))
            ids.append(int(logits[0, -1].argmax()))
    print(cell, "generated", "".join(itos.get(i, "_") for i in ids))
    probs = torch.softmax(logits[0, -1], dim=-1)
    torch.manual_seed(3)
    print(cell, "sampled", torch.multinomial(probs, 4, replacement=True).tolist())
