"""word2vec skip-gram with negative sampling, as in the tutorials: a toy corpus, a unigram^0.75
noise distribution sampled with torch.multinomial, two nn.Embedding(sparse=True) tables trained
with optim.SparseAdam (and plain SGD on the sparse gradients), logsigmoid losses, and nearest
neighbours by cosine similarity."""

import collections

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)
corpus = (
    "the king rules the kingdom and the queen rules the kingdom . "
    "the man walks the dog and the woman walks the cat . "
    "a king is a man and a queen is a woman . "
    "the dog chases the cat and the cat chases the mouse . "
) * 4
tokens = corpus.split()
counts = collections.Counter(tokens)
vocab = sorted(counts, key=lambda w: (-counts[w], w))
w2i = {w: i for i, w in enumerate(vocab)}
ids = torch.tensor([w2i[w] for w in tokens])
print(len(tokens), len(vocab), vocab[:5])

window = 2
pairs = []
for i in range(len(ids)):
    for j in range(max(0, i - window), min(len(ids), i + window + 1)):
        if j != i:
            pairs.append((ids[i].item(), ids[j].item()))
pairs = torch.tensor(pairs)
freq = torch.tensor([counts[w] for w in vocab], dtype=torch.float)
noise = freq.pow(0.75)
noise /= noise.sum()
print(pairs.shape, round(noise.max().item(), 5))


class SkipGram(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.in_embed = nn.Embedding(vocab_size, dim, sparse=True)
        self.out_embed = nn.Embedding(vocab_size, dim, sparse=True)
        init_range = 0.5 / dim
        self.in_embed.weight.data.uniform_(-init_range, init_range)
        self.out_embed.weight.data.zero_()

    def forward(self, center, context, negatives):
        v = self.in_embed(center)                       # (B, D)
        u = self.out_embed(context)                     # (B, D)
        u_neg = self.out_embed(negatives)               # (B, K, D)
        pos = F.logsigmoid(torch.sum(v * u, dim=1))
        neg = F.logsigmoid(-torch.bmm(u_neg, v.unsqueeze(2)).squeeze(2)).sum(1)
        return -(pos + neg).mean()


model = SkipGram(len(vocab), 10)
opt = torch.optim.SparseAdam(model.parameters(), lr=0.02)
K, B = 5, 64
for epoch in range(5):
    perm = torch.randperm(len(pairs))
    total = 0.0
    for start in range(0, len(pairs), B):
        batch = pairs[perm[start:start + B]]
        neg = torch.multinomial(noise, batch.size(0) * K, replacement=True).view(-1, K)
        opt.zero_grad()
        loss = model(batch[:, 0], batch[:, 1], neg)
        loss.backward()
        opt.step()
        total += loss.item() * batch.size(0)
    print(epoch, f"{total / len(pairs):.5f}")

g = model.in_embed.weight.grad
print(g.is_sparse, g.layout, g.coalesce().indices().shape[0] <= len(vocab))
print(sorted(opt.state_dict()["state"][0].keys()), opt.state_dict()["state"][0]["step"])

# a few more steps with plain SGD on the sparse gradients
sgd = torch.optim.SGD(model.parameters(), lr=0.5)
before = model.in_embed.weight.detach().clone()
for start in range(0, 256, B):
    batch = pairs[start:start + B]
    neg = torch.multinomial(noise, batch.size(0) * K, replacement=True).view(-1, K)
    sgd.zero_grad()
    loss = model(batch[:, 0], batch[:, 1], neg)
    loss.backward()
    sgd.step()
changed = (model.in_embed.weight.detach() != before).any(1)
print(f"{loss.item():.5f}", changed.sum().item(), changed.nonzero().flatten().tolist())

emb = F.normalize(model.in_embed.weight.detach(), dim=1)
sims = emb @ emb.T
for w in ["king", "dog", "cat"]:
    scores, idx = sims[w2i[w]].topk(4)
    print(w, [vocab[i] for i in idx.tolist()[1:]], [round(s, 3) for s in scores.tolist()[1:]])
cos = F.cosine_similarity(emb[w2i["king"]], emb[w2i["queen"]], dim=0)
print(round(cos.item(), 4))
