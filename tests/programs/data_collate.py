"""What default_collate makes of what Datasets return (NumPy arrays and scalars, Python floats
and ints, strings, namedtuples, nested dicts), default_convert, DistributedSampler with explicit
replicas, ChainDataset/StackDataset, a custom bucketing Sampler, and a k-fold split by hand."""
import collections

import numpy as np
import torch
from torch.utils.data import (ChainDataset, DataLoader, Dataset, DistributedSampler,
                              IterableDataset, Sampler, StackDataset, Subset, TensorDataset)
from torch.utils.data import default_collate
from torch.utils.data.dataloader import default_convert

torch.manual_seed(0)
Point = collections.namedtuple("Point", ["x", "y"])


class Mixed(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"img": np.full((2, 2), i, dtype=np.float32), "label": i % 2, "score": i / 4,
                "name": f"item{i}", "pt": Point(np.int64(i), np.float64(i * 0.5)),
                "meta": {"flag": bool(i % 2), "vec": [i, i + 1]}}


batch = next(iter(DataLoader(Mixed(), batch_size=3)))
print(sorted(batch))
print(batch["img"].dtype, batch["img"].shape, batch["label"], batch["score"].dtype)
print(batch["name"], type(batch["pt"]).__name__, batch["pt"].x, batch["pt"].y.dtype)
print(batch["meta"]["flag"], batch["meta"]["vec"])
print(default_collate([(1, 2.0), (3, 4.0)]), default_collate([np.array([1, 2]), np.array([3, 4])]))
print(default_collate([torch.tensor(1.0), torch.tensor(2.0)]).shape)
print(default_convert(np.arange(3)),
      default_convert({"a": np.ones(2, dtype=np.float64)})["a"].dtype)
print(default_convert([np.int32(3), "s", 2.5]))
nb = next(iter(DataLoader(Mixed(), batch_size=None)))
print(type(nb["img"]).__name__, nb["img"].dtype, type(nb["label"]).__name__)

ds = TensorDataset(torch.arange(10.0))
for rank in range(3):
    s = DistributedSampler(ds, num_replicas=3, rank=rank, shuffle=True, seed=1)
    s.set_epoch(2)
    print("rank", rank, list(s), len(s))
s = DistributedSampler(ds, num_replicas=4, rank=3, shuffle=False, drop_last=True)
print(list(s), len(s))


class Stream(IterableDataset):
    def __init__(self, start, n):
        self.start, self.n = start, n

    def __iter__(self):
        return iter(range(self.start, self.start + self.n))


print(list(ChainDataset([Stream(0, 3), Stream(10, 2)])))
sd = StackDataset(a=TensorDataset(torch.arange(3)), b=[10, 11, 12])
print(len(sd), sd[1])
print(next(iter(DataLoader(sd, batch_size=3))))


class BucketSampler(Sampler):
    def __init__(self, lengths, batch_size):
        self.lengths, self.batch_size = lengths, batch_size

    def __iter__(self):
        order = sorted(range(len(self.lengths)), key=lambda i: self.lengths[i])
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for j in torch.randperm(len(batches)).tolist():
            yield batches[j]

    def __len__(self):
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size


lengths = torch.randint(1, 9, (10,)).tolist()
seqs = [torch.ones(n) * i for i, n in enumerate(lengths)]
dl = DataLoader(seqs, batch_sampler=BucketSampler(lengths, 4),
                collate_fn=lambda b: torch.nn.utils.rnn.pad_sequence(b, batch_first=True))
for b in dl:
    print("bucket", tuple(b.shape), b[:, 0].long().tolist())
print(len(dl))

# k-fold cross validation by hand
X = torch.randn(20, 3)
y = (X.sum(1) > 0).long()
full = TensorDataset(X, y)
idx = torch.randperm(20)
folds = idx.chunk(4)
for k, val_idx in enumerate(folds):
    train_idx = torch.cat([f for j, f in enumerate(folds) if j != k])
    tr, va = Subset(full, train_idx.tolist()), Subset(full, val_idx)
    torch.manual_seed(k)
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(3):
        for xb, yb in DataLoader(tr, batch_size=5, shuffle=True):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    xv, yv = next(iter(DataLoader(va, batch_size=len(va))))
    pred = model(xv).argmax(1)
    cm = torch.bincount(yv * 2 + pred, minlength=4).reshape(2, 2)
    tp, fp, fn = cm[1, 1].item(), cm[0, 1].item(), cm[1, 0].item()
    prec = tp / max(tp + fp, 1)
    rec = tp / max(tp + fn, 1)
    print("fold", k, len(tr), len(va), cm.tolist(), round(prec, 3), round(rec, 3))
