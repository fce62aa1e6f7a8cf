"""Metric learning on clustered points: an embedding net with L2-normalised outputs, a
P-classes x K-samples batch sampler, batch-hard triplet mining from a torch.cdist distance
matrix with masks (hardest positive, hardest negative via masked_fill), TripletMarginLoss and
TripletMarginWithDistanceLoss with a cosine distance and swap, a contrastive loss, semi-hard
mining, and recall@1 from nearest neighbours."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(4)
N_CLASSES, PER_CLASS, DIM_IN = 6, 20, 10
centers = torch.randn(N_CLASSES, DIM_IN)
X = centers.repeat_interleave(PER_CLASS, 0) + torch.randn(N_CLASSES * PER_CLASS, DIM_IN)
Y = torch.arange(N_CLASSES).repeat_interleave(PER_CLASS)
perm = torch.randperm(len(X))
X, Y = X[perm], Y[perm]
Xtr, Ytr, Xte, Yte = X[:90], Y[:90], X[90:], Y[90:]


class EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM_IN, 32), nn.BatchNorm1d(32), nn.PReLU(),
                                 nn.Linear(32, 8))

    def forward(self, x):
        return F.normalize(self.net(x), p=2, dim=1)


def pk_batch(labels, p=3, k=4):
    classes = torch.unique(labels)
    chosen = classes[torch.randperm(len(classes))[:p]]
    idx = []
    for c in chosen:
        pool = (labels == c).nonzero(as_tuple=True)[0]
        idx.append(pool[torch.randperm(len(pool))[:k]])
    return torch.cat(idx)


def batch_hard_triplet_loss(emb, labels, margin=0.3):
    dist = torch.cdist(emb, emb, p=2)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool)
    pos_mask = same & ~eye
    hardest_pos = (dist * pos_mask.float()).max(dim=1).values
    hardest_neg = dist.masked_fill(same, float("inf")).min(dim=1).values
    loss = F.relu(hardest_pos - hardest_neg + margin)
    frac = (loss > 1e-16).float().mean()
    return loss.mean(), frac


def semi_hard_triplets(emb, labels, margin=0.3):
    dist = torch.cdist(emb, emb).detach()
    anchors, positives, negatives = [], [], []
    for a in range(len(labels)):
        for p in (labels == labels[a]).nonzero().flatten().tolist():
            if p == a:
                continue
            d_ap = dist[a, p]
            neg_ok = (labels != labels[a]) & (dist[a] > d_ap) & (dist[a] < d_ap + margin)
            cands = neg_ok.nonzero().flatten()
            if len(cands) == 0:
                cands = (labels != labels[a]).nonzero().flatten()
                n = cands[dist[a, cands].argmin()]
            else:
                n = cands[dist[a, cands].argmin()]
            anchors.append(a)
            positives.append(p)
            negatives.append(int(n))
    return torch.tensor(anchors), torch.tensor(positives), torch.tensor(negatives)


model = EmbeddingNet()
opt = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-4)
for step in range(30):
    model.train()
    idx = pk_batch(Ytr)
    emb = model(Xtr[idx])
    loss, frac = batch_hard_triplet_loss(emb, Ytr[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 9:
        print(step, f"{loss.item():.5f}", f"{frac.item():.3f}")

cos_dist = lambda a, b: 1.0 - F.cosine_similarity(a, b)  # noqa: E731
crit = nn.TripletMarginWithDistanceLoss(distance_function=cos_dist, margin=0.2, swap=True)
plain = nn.TripletMarginLoss(margin=0.5, p=2)
opt2 = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(10):
    idx = pk_batch(Ytr, p=4, k=3)
    emb = model(Xtr[idx])
    a, p, n = semi_hard_triplets(emb, Ytr[idx])
    loss = crit(emb[a], emb[p], emb[n]) + 0.5 * plain(emb[a], emb[p], emb[n])
    opt2.zero_grad()
    loss.backward()
    opt2.step()
    if step % 3 == 0:
        print(step, len(a), f"{loss.item():.5f}")

# a pairwise contrastive loss with pairwise_distance
e1, e2 = model(Xtr[:20]), model(Xtr[20:40])
same = (Ytr[:20] == Ytr[20:40]).float()
d = F.pairwise_distance(e1, e2)
contrastive = (same * d.pow(2) + (1 - same) * F.relu(1.0 - d).pow(2)).mean() / 2
print(f"{contrastive.item():.5f}", same.sum().item())
euclid = nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance(), margin=1.0,
                                          reduction="none")
print([round(v, 4) for v in euclid(e1[:4], e1[4:8], e2[:4]).tolist()])

model.eval()
with torch.no_grad():
    q, g = model(Xte), model(Xtr)
    d = torch.cdist(q, g)
    nn_idx = d.argmin(dim=1)
    recall1 = (Ytr[nn_idx] == Yte).float().mean()
    _, top5 = d.topk(5, dim=1, largest=False)
    recall5 = (Ytr[top5] == Yte.unsqueeze(1)).any(1).float().mean()
    sq = torch.cdist(q, g, compute_mode="donot_use_mm_for_euclid_dist")
print(f"recall@1 {recall1.item():.4f}", f"recall@5 {recall5.item():.4f}",
      torch.allclose(sq, d, atol=1e-5))
