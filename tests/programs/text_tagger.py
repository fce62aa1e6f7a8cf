"""A sequence tagger on variable-length sentences: padded batches with nn.Embedding(padding_idx),
a packed bidirectional LSTM, token-level cross entropy with ignore_index (padding) and label
smoothing, AdamW with OneCycleLR, gradient accumulation, early stopping on a validation split
and a best-model checkpoint kept in memory."""
import copy
import io

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

torch.manual_seed(0)
VOCAB, TAGS, PAD, IGNORE = 20, 3, 0, -100


def sentence():
    n = int(torch.randint(3, 9, ()).item())
    words = torch.randint(1, VOCAB, (n,))
    tags = (words % 3).clone()
    tags[1:] = torch.where(words[:-1] > 14, torch.full_like(tags[1:], 2), tags[1:])
    return words, tags


data = [sentence() for _ in range(96)]
train, valid = data[:80], data[80:]


def collate(items):
    items = sorted(items, key=lambda wt: len(wt[0]), reverse=True)
    lengths = torch.tensor([len(w) for w, _ in items])
    words = pad_sequence([w for w, _ in items], batch_first=True, padding_value=PAD)
    tags = pad_sequence([t for _, t in items], batch_first=True, padding_value=IGNORE)
    return words, tags, lengths


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 12, padding_idx=PAD)
        self.lstm = nn.LSTM(12, 10, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(20, TAGS)

    def forward(self, words, lengths):
        packed = pack_padded_sequence(self.emb(words), lengths, batch_first=True)
        h, _ = self.lstm(packed)
        h, _ = pad_packed_sequence(h, batch_first=True, total_length=words.shape[1])
        return self.out(self.drop(h))


model = Tagger()
opt = torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.01)
steps, accum = 6 * 5, 2
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=steps)


def evaluate(items):
    model.eval()
    with torch.no_grad():
        words, tags, lengths = collate(items)
        logits = model(words, lengths)
        loss = F.cross_entropy(logits.reshape(-1, TAGS), tags.reshape(-1), ignore_index=IGNORE)
        mask = tags != IGNORE
        acc = ((logits.argmax(-1) == tags) & mask).sum().item() / mask.sum().item()
    return loss.item(), acc


best, best_state, bad_epochs = float("inf"), None, 0
for epoch in range(6):
    model.train()
    order = torch.randperm(len(train)).tolist()
    opt.zero_grad()
    for i in range(0, len(train), 8):
        words, tags, lengths = collate([train[j] for j in order[i:i + 8]])
        logits = model(words, lengths)
        loss = F.cross_entropy(logits.transpose(1, 2), tags, ignore_index=IGNORE,
                               label_smoothing=0.1) / accum
        loss.backward()
        if (i // 8) % accum == accum - 1:
            opt.step()
            sched.step()
            opt.zero_grad()
    val_loss, val_acc = evaluate(valid)
    print(f"epoch {epoch} lr {sched.get_last_lr()[0]:.5f} val loss {val_loss:.5f} "
          f"acc {val_acc:.4f}")
    if val_loss < best - 1e-4:
        best, bad_epochs = val_loss, 0
        best_state = copy.deepcopy(model.state_dict())
    else:
        bad_epochs += 1
        if bad_epochs >= 2:
            print("early stop")
            break

buf = io.BytesIO()
torch.save(best_state, buf)
buf.seek(0)
model.load_state_dict(torch.load(buf))
print("best val", evaluate(valid))
print("padding row", model.emb.weight[PAD].abs().sum().item())
words, tags, lengths = collate(valid[:2])
print("pred", model(words, lengths).argmax(-1).tolist())
print("gold", tags.tolist())
