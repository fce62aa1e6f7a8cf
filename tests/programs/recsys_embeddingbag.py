"""A click-through-rate recommender as in the DLRM / TorchRec tutorials: multi-hot categorical
features packed as a flat index tensor with offsets into nn.EmbeddingBag (sum, mean and max
modes, per_sample_weights, padding_idx, include_last_offset), dense features through an MLP, a
pairwise dot-product interaction, BCEWithLogitsLoss, Adagrad, AUC by ranking and top-k items."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)
N_ITEMS, N_CATS, DIM, PAD = 25, 6, 8, 0

# the functional and module forms on a fixed example
bag = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
flat = torch.tensor([1, 2, 0, 4, 5, 0, 7])
offsets = torch.tensor([0, 3, 3, 5])        # the second bag is empty
print(bag(flat, offsets).shape, bag(flat, offsets)[1].tolist())
w = torch.arange(30, dtype=torch.float).view(10, 3)
for mode in ["sum", "mean", "max"]:
    out = F.embedding_bag(flat, w, offsets, mode=mode, padding_idx=0)
    print(mode, out.tolist())
psw = torch.tensor([0.5, 1.0, 2.0, 1.0, -1.0, 3.0, 0.25])
print(F.embedding_bag(flat, w, offsets, mode="sum", per_sample_weights=psw).tolist())
print(F.embedding_bag(flat, w, torch.tensor([0, 3, 3, 5, 7]), include_last_offset=True).shape)
print(F.embedding_bag(torch.tensor([[1, 2], [3, 0]]), w, mode="mean", padding_idx=0).tolist())
pre = nn.EmbeddingBag.from_pretrained(w, mode="max", freeze=True)
print(pre(torch.tensor([[1, 9], [4, 2]])).tolist(), pre.weight.requires_grad)


def make_batch(n):
    lengths = torch.randint(1, 5, (n,))
    items = torch.randint(1, N_ITEMS, (int(lengths.sum()),))
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    weights = torch.rand(items.shape[0]) + 0.5      # e.g. recency weights
    cats = torch.randint(0, N_CATS, (n, 2))
    dense = torch.randn(n, 4)
    seg = torch.repeat_interleave(torch.arange(n), lengths)
    score = torch.zeros(n).index_add_(0, seg, (items % 3 == 0).float() * weights)
    label = ((score + dense[:, 0] + (cats[:, 0] == 2).float()) > 1.0).float()
    return items, offsets, weights, cats, dense, label


class CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = nn.EmbeddingBag(N_ITEMS, DIM, mode="sum", padding_idx=PAD)
        self.cats = nn.EmbeddingBag(N_CATS, DIM, mode="mean")
        self.cat_max = nn.EmbeddingBag(N_CATS, DIM, mode="max")
        self.bottom = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, DIM), nn.ReLU())
        n_feat = 4
        self.top = nn.Sequential(nn.Linear(DIM + n_feat * (n_feat - 1) // 2, 16), nn.ReLU(),
                                 nn.Linear(16, 1))

    def forward(self, items, offsets, weights, cats, dense):
        h = self.history(items, offsets, per_sample_weights=weights)
        c = self.cats(cats)                       # 2D input: each row is a bag
        m = self.cat_max(cats)
        d = self.bottom(dense)
        feats = torch.stack([d, h, c, m], dim=1)  # (B, 4, D)
        inter = torch.bmm(feats, feats.transpose(1, 2))
        li, lj = torch.tril_indices(4, 4, offset=-1)
        z = torch.cat([d, inter[:, li, lj]], dim=1)
        return self.top(z).squeeze(1)


model = CTR()
print(sum(p.numel() for p in model.parameters()))
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
crit = nn.BCEWithLogitsLoss()
train = [make_batch(32) for _ in range(8)]
for epoch in range(4):
    tot = 0.0
    for items, offsets, weights, cats, dense, label in train:
        opt.zero_grad()
        loss = crit(model(items, offsets, weights, cats, dense), label)
        loss.backward()
        opt.step()
        tot += loss.item()
    print(epoch, f"{tot / len(train):.5f}")
print(model.history.weight.grad[PAD].abs().sum().item(),
      model.cat_max.weight.grad.ne(0).sum().item() > 0)


def auc(scores, labels):
    order = scores.argsort()
    ranks = torch.empty_like(order)
    ranks[order] = torch.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return ((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)).item()


model.eval()
items, offsets, weights, cats, dense, label = make_batch(64)
with torch.no_grad():
    logits = model(items, offsets, weights, cats, dense)
probs = torch.sigmoid(logits)
print(f"auc {auc(logits, label):.4f}", f"{probs.mean().item():.4f}",
      ((probs > 0.5).float() == label).float().mean().item())
with torch.no_grad():
    table = model.history.weight
    user = model.history(items[:3].unsqueeze(0))      # a user profile from three items
    scores = (user @ table.T).squeeze(0)
    scores[PAD] = float("-inf")
    top = scores.topk(5)
print(top.indices.tolist(), [round(v, 4) for v in top.values.tolist()])
