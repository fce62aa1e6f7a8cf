"""A Transformer encoder classifying token sequences, with padding and causal masks."""
import math

import torch
import torch.nn as nn

torch.manual_seed(5)
vocab, d_model, max_len = 12, 16, 10


class PositionalEncoding(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        pos = torch.arange(n).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(n, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.pos = PositionalEncoding(d_model, max_len)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=32, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 2)

    def forward(self, tokens, causal=False):
        pad_mask = tokens == 0
        n = tokens.size(1)
        attn_mask = nn.Transformer.generate_square_subsequent_mask(n) if causal else None
        h = self.encoder(self.pos(self.embed(tokens) * math.sqrt(d_model)), mask=attn_mask,
                         src_key_padding_mask=pad_mask)
        h = h.masked_fill(pad_mask.unsqueeze(-1), 0.0)
        return self.head(h.sum(1) / (~pad_mask).sum(1, keepdim=True))


lengths = torch.randint(3, max_len + 1, (48,))
tokens = torch.randint(1, vocab, (48, max_len))
tokens[torch.arange(max_len).unsqueeze(0) >= lengths.unsqueeze(1)] = 0
labels = ((tokens == 3).sum(1) > (tokens == 7).sum(1)).long()

model = Classifier()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
for epoch in range(8):
    model.train()
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(tokens), labels)
    loss.backward()
    opt.step()
    sched.step()
    print(f"epoch {epoch} loss {loss.item():.5f} lr {sched.get_last_lr()[0]:.6f}")

model.eval()
with torch.no_grad():
    logits = model(tokens)
    acc = (logits.argmax(dim=1) == labels).float().mean()
    causal_logits = model(tokens[:3], causal=True)
print(f"accuracy {acc.item():.4f}")
print("causal", causal_logits.numpy().round(4).tolist())
