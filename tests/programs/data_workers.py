"""DataLoader with worker processes: map and iterable datasets, get_worker_info sharding,
worker_init_fn, a custom collate_fn, persistent workers, drop_last, samplers, ConcatDataset,
Subset, default_collate of dicts and tuples."""

import math
import torch
from torch.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    get_worker_info,
    ConcatDataset,
    Subset,
    BatchSampler,
    SequentialSampler,
    RandomSampler,
)
from torch.utils.data.dataloader import default_collate


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": torch.tensor([float(i), float(i * i)]), "y": i % 3, "name": f"item{i}"}


class Stream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            lo, hi = self.start, self.end
        else:
            per = int(math.ceil((self.end - self.start) / info.num_workers))
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        return iter(range(lo, hi))


def pad_collate(batch):
    xs = [torch.arange(b % 4 + 1) for b in batch]
    lens = torch.tensor([len(x) for x in xs])
    return torch.nn.utils.rnn.pad_sequence(xs, batch_first=True), lens


def seed_worker(worker_id):
    info = get_worker_info()
    assert info.id == worker_id


if __name__ == "__main__":
    torch.manual_seed(0)
    ds = Squares(10)
    for batch in DataLoader(ds, batch_size=4, num_workers=2, worker_init_fn=seed_worker):
        print(batch["x"].shape, batch["y"], batch["name"])
    print(sorted(DataLoader(Stream(3, 10), num_workers=2, batch_size=None)))
    dl = DataLoader(
        Stream(0, 9), batch_size=3, num_workers=2, collate_fn=pad_collate, persistent_workers=True
    )
    for ep in range(2):
        print(ep, [(p.shape, n.tolist()) for p, n in dl])
    both = ConcatDataset([Squares(3), Subset(Squares(10), [7, 8])])
    print(len(both), [both[i]["y"] for i in range(len(both))])
    g = torch.Generator().manual_seed(1)
    print([b for b in BatchSampler(RandomSampler(range(7), generator=g), 3, drop_last=True)])
    print(list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)))
    c = default_collate([(torch.ones(2), 1.5, (3, "a")), (torch.zeros(2), 2.5, (4, "b"))])
    print(c[0], c[1], c[2])
    dl = DataLoader(
        ds, batch_size=3, shuffle=True, drop_last=True, generator=torch.Generator().manual_seed(3)
    )
    print(len(dl), [b["y"].tolist() for b in dl])
