"""Data-parallel training with ndgrad.distributed: every rank trains the same MLP on its share of
a synthetic regression data set; DistributedDataParallel averages the gradients.

Run on 2 processes (any number works, also 1):

    python -m ndgrad.distributed.run --nproc-per-node 2 examples/ddp_train.py --epochs 5

Needs the distributed extra (pip install -e ".[distributed]": mpi4py and the mpich wheel).
"""

from __future__ import annotations

import argparse

import ndgrad
import ndgrad.distributed as dist
import ndgrad.nn as nn
import ndgrad.nn.functional as F
from ndgrad.nn.parallel import DistributedDataParallel as DDP
from ndgrad.utils.data import DataLoader, TensorDataset
from ndgrad.utils.data.distributed import DistributedSampler


def make_data(n: int = 2048) -> TensorDataset:
    """y = sin(x @ w) + noise, the same on every rank (same seed)."""
    g = ndgrad.Generator().manual_seed(0)
    x = ndgrad.randn(n, 8, generator=g)
    w = 0.4 * ndgrad.randn(8, 2, generator=g)
    y = (x @ w).sin() + 0.05 * ndgrad.randn(n, 2, generator=g)
    return TensorDataset(x, y)


def main(epochs: int = 5, batch_size: int = 64, lr: float = 0.05, verbose: bool = True) -> dict:
    dist.init_process_group(backend="mpi")       # RANK / WORLD_SIZE come from the launcher
    rank, world = dist.get_rank(), dist.get_world_size()

    data = make_data()
    sampler = DistributedSampler(data, shuffle=True, seed=0)   # this rank's share
    loader = DataLoader(data, batch_size=batch_size, sampler=sampler)

    ndgrad.manual_seed(rank)             # different initial weights on purpose: DDP
    model = DDP(nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 2)))   # copies rank 0's
    opt = ndgrad.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    losses = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)         # another shuffle each epoch, the same on every rank
        total = ndgrad.zeros(2)          # (sum of losses, number of batches)
        for x, y in loader:
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()              # gradients are averaged over the ranks here
            opt.step()
            total += ndgrad.tensor([loss.item(), 1.0])
        dist.all_reduce(total)           # the epoch's mean loss over all ranks
        losses.append((total[0] / total[1]).item())
        if verbose and rank == 0:
            print(f"epoch {epoch}: loss {losses[-1]:.4f} ({world} ranks)", flush=True)

    # Every rank holds the same parameters at the end.
    mine = [p.detach().clone() for p in model.parameters()]
    firsts = [p.clone() for p in mine]
    for p in firsts:
        dist.broadcast(p, src=0)
    same = all(ndgrad.equal(a, b) for a, b in zip(mine, firsts))
    flags = [None] * world
    dist.all_gather_object(flags, same)
    if verbose and rank == 0:
        print("parameters identical on all ranks:", all(flags), flush=True)
    dist.destroy_process_group()
    return {"losses": losses, "identical": all(flags), "world": world}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    a = ap.parse_args()
    main(a.epochs, a.batch_size, a.lr)
