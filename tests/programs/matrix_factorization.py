"""Matrix factorization: sparse embeddings with SparseAdam, samplers, Adagrad, collate_fn."""

import torch
import torch.nn as nn
from torch.utils.data import (
    DataLoader,
    Dataset,
    WeightedRandomSampler,
    BatchSampler,
    SequentialSampler,
)

torch.manual_seed(21)
n_users, n_items, n_obs = 30, 20, 400
users = torch.randint(0, n_users, (n_obs,))
items = torch.randint(0, n_items, (n_obs,))
U_true, V_true = torch.randn(n_users, 3), torch.randn(n_items, 3)
ratings = (U_true[users] * V_true[items]).sum(1) + 0.1 * torch.randn(n_obs)


class Ratings(Dataset):
    def __len__(self):
        return n_obs

    def __getitem__(self, i):
        return users[i].item(), items[i].item(), ratings[i].item()


def collate(batch):
    u, i, r = zip(*batch)
    return torch.tensor(u), torch.tensor(i), torch.tensor(r, dtype=torch.float32)


weights = torch.where(ratings > 0, 2.0, 1.0)
sampler = WeightedRandomSampler(weights, num_samples=n_obs, replacement=True)
dl = DataLoader(Ratings(), batch_size=50, sampler=sampler, collate_fn=collate)


class MF(nn.Module):
    def __init__(self):
        super().__init__()
        self.U = nn.Embedding(n_users, 3, sparse=True)
        self.V = nn.Embedding(n_items, 3, sparse=True)
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, u, i):
        return (self.U(u) * self.V(i)).sum(-1) + self.bias


model = MF()
sparse_opt = torch.optim.SparseAdam(
    list(model.U.parameters()) + list(model.V.parameters()), lr=0.05
)
dense_opt = torch.optim.Adagrad([model.bias], lr=0.1)
for epoch in range(4):
    total = 0.0
    for u, i, r in dl:
        sparse_opt.zero_grad()
        dense_opt.zero_grad()
        loss = nn.functional.mse_loss(model(u, i), r)
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
        total += loss.item() * len(r)
    print(epoch, round(total / n_obs, 4), model.U.weight.grad.is_sparse)
print(list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)))
print(model.U.weight.grad._nnz() > 0, model.U.weight.grad.coalesce().indices().shape[0])
