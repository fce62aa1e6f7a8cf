"""Data utilities: random_split with a generator, Subset, ConcatDataset, WeightedRandomSampler
for class imbalance, BatchSampler, a custom collate_fn that pads, an IterableDataset, and a
DataLoader with its own generator."""
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                              RandomSampler, SequentialSampler, Subset, SubsetRandomSampler,
                              TensorDataset, WeightedRandomSampler, random_split)

torch.manual_seed(0)


class Sentences(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.items = [torch.randint(1, 50, (int(torch.randint(2, 7, (1,), generator=g)),),
                                    generator=g) for _ in range(n)]
        self.labels = [int(s.sum()) % 2 for s in self.items]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {"ids": self.items[i], "label": self.labels[i]}


def pad_collate(batch):
    ids = [b["ids"] for b in batch]
    lengths = torch.tensor([len(s) for s in ids])
    padded = pad_sequence(ids, batch_first=True, padding_value=0)
    mask = padded != 0
    return padded, lengths, mask, torch.tensor([b["label"] for b in batch])


ds = Sentences(30)
train, val, test = random_split(ds, [0.6, 0.2, 0.2], generator=torch.Generator().manual_seed(42))
print(len(train), len(val), len(test), train.indices[:5], type(train).__name__)
a, b = random_split(range(10), [7, 3], generator=torch.Generator().manual_seed(0))
print(list(a), list(b))
loader = DataLoader(train, batch_size=4, shuffle=True, collate_fn=pad_collate,
                    generator=torch.Generator().manual_seed(7), drop_last=True)
print("batches", len(loader))
for padded, lengths, mask, labels in loader:
    print(padded.shape, lengths.tolist(), mask.sum(1).tolist(), labels.tolist())

labels = torch.tensor([0] * 20 + [1] * 4)
class_count = torch.bincount(labels)
weights = 1.0 / class_count.float()
sample_w = weights[labels]
sampler = WeightedRandomSampler(sample_w, num_samples=24, replacement=True)
feats = torch.arange(24.0).unsqueeze(1)
wl = DataLoader(TensorDataset(feats, labels), batch_size=8, sampler=sampler)
for xb, yb in wl:
    print("weighted", yb.tolist(), xb.squeeze(1).long().tolist())
print(list(WeightedRandomSampler([0.1, 0.9, 0.4, 0.7], 3, replacement=False)))

print(list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False)))
print(list(BatchSampler(RandomSampler(range(10)), batch_size=4, drop_last=True)))
print(list(SubsetRandomSampler([3, 5, 7, 9])))
bl = DataLoader(TensorDataset(feats), batch_sampler=BatchSampler(
    RandomSampler(feats, replacement=True, num_samples=6), 3, False))
print([x[0].squeeze(1).tolist() for x in bl])

cat = ConcatDataset([TensorDataset(torch.zeros(3, 2)), TensorDataset(torch.ones(4, 2))])
print(len(cat), cat.cumulative_sizes, cat[2][0].tolist(), cat[3][0].tolist(), cat[-1][0].tolist())
sub = Subset(ds, [0, 2, 4])
print(len(sub), sub[1]["ids"].tolist(), sub[1]["label"])
print([b["label"].tolist() for b in DataLoader(sub, batch_size=2, collate_fn=lambda bs: {
    "label": torch.tensor([x["label"] for x in bs])})])


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield torch.tensor([i, i * i]), i % 3


for xb, yb in DataLoader(Stream(7), batch_size=3):
    print("stream", xb.tolist(), yb.tolist())
print([b for b in DataLoader(Stream(3), batch_size=None)][1])
dl = DataLoader(TensorDataset(feats[:10], labels[:10]), batch_size=4, shuffle=True)
print([y.shape[0] for _, y in dl], len(dl), len(dl.dataset), dl.batch_size)
x0, y0 = next(iter(dl))
print(x0.dtype, y0.dtype, x0.squeeze(1).tolist())
