"""Launched by tests/test_distributed.py with 2 and 4 ranks: DistributedDataParallel against a
single process training on the full batch (float64)."""

import copy
import datetime
import sys
import warnings

import numpy as np

import ndgrad
import ndgrad.distributed as dist
import ndgrad.nn as nn
from ndgrad.nn.parallel import DistributedDataParallel as DDP
from ndgrad.utils.data import DataLoader, TensorDataset
from ndgrad.utils.data.distributed import DistributedSampler

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
R, N = dist.get_rank(), dist.get_world_size()
checks = 0
B = 4 * N                                  # full batch; 4 rows per rank


def close(a, b, tol=1e-12):
    global checks
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)
    checks += 1


def model():
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3)).double()


ndgrad.manual_seed(123)
X = ndgrad.randn(B, 6, dtype=ndgrad.float64)
Y = ndgrad.randn(B, 3, dtype=ndgrad.float64)
mine = slice(4 * R, 4 * R + 4)

# 1. construction broadcasts rank 0's parameters (each rank starts from its own seed) and
# gradients equal the full batch's, with one bucket and with many small buckets
for cap in (None, 0.0005):
    ndgrad.manual_seed(R)
    local = model()
    ddp = DDP(local, bucket_cap_mb=cap)
    ndgrad.manual_seed(0)
    ref = model()
    ref.load_state_dict(local.state_dict())
    gathered = [ndgrad.zeros(16, 6, dtype=ndgrad.float64) for _ in range(N)]
    dist.all_gather(gathered, local[0].weight.detach().clone())
    for g in gathered:
        close(g, gathered[0], 0)
    nn.functional.mse_loss(ddp(X[mine]), Y[mine]).backward()
    nn.functional.mse_loss(ref(X), Y).backward()
    for p, q in zip(local.parameters(), ref.parameters()):
        close(p.grad, q.grad)
    if cap is not None:
        assert len(ddp._buckets) >= 3, len(ddp._buckets)

# 2. ten SGD steps (momentum) give the single-process trajectory
ndgrad.manual_seed(7)
local = model()
ref = copy.deepcopy(local)
ddp = DDP(local, bucket_cap_mb=0.001)
opt = ndgrad.optim.SGD(local.parameters(), lr=0.1, momentum=0.9)
ropt = ndgrad.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
for step in range(10):
    xb = ndgrad.randn(B, 6, dtype=ndgrad.float64, generator=ndgrad.Generator().manual_seed(step))
    yb = ndgrad.randn(B, 3, dtype=ndgrad.float64,
                      generator=ndgrad.Generator().manual_seed(100 + step))
    opt.zero_grad()
    ropt.zero_grad()
    nn.functional.mse_loss(ddp(xb[mine]), yb[mine]).backward()
    nn.functional.mse_loss(ref(xb), yb).backward()
    opt.step()
    ropt.step()
for p, q in zip(local.parameters(), ref.parameters()):
    close(p, q, 1e-10)

# 3. no_sync: two accumulated micro-batches then a synchronized one = the sum of three full
# batches' gradients
ndgrad.manual_seed(8)
local = model()
ref = copy.deepcopy(local)
ddp = DDP(local)
with ddp.no_sync():
    for k in range(2):
        nn.functional.mse_loss(ddp(X[mine] * (k + 1)), Y[mine]).backward()
        if k == 0:
            w0 = local[0].weight.grad.clone()
allsame = [ndgrad.zeros_like(w0) for _ in range(N)]
dist.all_gather(allsame, w0)
assert N == 1 or not np.allclose(allsame[0].numpy(), allsame[1].numpy())   # not averaged
nn.functional.mse_loss(ddp(X[mine] * 3), Y[mine]).backward()
for k in range(3):
    nn.functional.mse_loss(ref(X * (k + 1)), Y).backward()
for p, q in zip(local.parameters(), ref.parameters()):
    close(p.grad, q.grad)


# 3b. a forward without grad between a training forward and its backward (an evaluation)
# does not cancel the reduction
ndgrad.manual_seed(11)
local = model()
ref = copy.deepcopy(local)
ddp = DDP(local)
out = ddp(X[mine])
with ndgrad.no_grad():
    ddp(X[mine])
nn.functional.mse_loss(out, Y[mine]).backward()
nn.functional.mse_loss(ref(X), Y).backward()
for p, q in zip(local.parameters(), ref.parameters()):
    close(p.grad, q.grad)

# 4. unused parameters: one unused on every rank (its grad stays None), one used only on rank 0
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 3).double()
        self.b = nn.Linear(6, 3).double()      # used on rank 0 only
        self.never = nn.Linear(6, 3).double()  # never used

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)


ndgrad.manual_seed(9)
local = Branchy()
ref = copy.deepcopy(local)
ddp = DDP(local, find_unused_parameters=True)
for _ in range(2):
    local.zero_grad()
    nn.functional.mse_loss(ddp(X[mine], R == 0), Y[mine]).backward()
ref.zero_grad()
for r in range(N):      # the average of the ranks' own losses
    (nn.functional.mse_loss(ref(X[4 * r:4 * r + 4], r == 0), Y[4 * r:4 * r + 4]) / N).backward()
close(local.a.weight.grad, ref.a.weight.grad)
close(local.b.weight.grad, ref.b.weight.grad)           # averaged, also where it was unused
assert local.never.weight.grad is None and local.never.bias.grad is None
checks += 1
with warnings.catch_warnings(record=True) as rec:        # all used: torch's warning
    warnings.simplefilter("always")
    d2 = DDP(nn.Linear(6, 3).double(), find_unused_parameters=True)
    d2(X[mine]).sum().backward()
assert any("did not find any unused parameters" in str(w.message) for w in rec)
# without find_unused_parameters, the next forward raises torch's error
d3 = DDP(Branchy())
d3(X[mine], False).sum().backward()
try:
    d3(X[mine], False)
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e), str(e)
    assert "Parameter indices which did not receive grad for rank" in str(e)
    checks += 1
else:
    raise AssertionError("no error for unused parameters")

# 5. buffers: rank 0's running statistics are broadcast at construction and every forward
ndgrad.manual_seed(10)
bn = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4)).double()
bn[1].running_mean.fill_(float(R))
dbn = DDP(bn)
close(bn[1].running_mean, ndgrad.zeros(4, dtype=ndgrad.float64), 0)
dbn(X[mine]).sum().backward()
bn[1].running_mean.fill_(float(R + 5))
dbn.eval()                 # (in training mode the forward updates them from the local batch)
dbn(X[mine])
means = [ndgrad.zeros(4, dtype=ndgrad.float64) for _ in range(N)]
dist.all_gather(means, bn[1].running_mean.clone())
for m in means:
    close(m, means[0], 0)
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    DDP(nn.Linear(2, 2), broadcast_buffers=False)
assert any("`broadcast_buffers` is deprecated" in str(w.message) for w in rec)

# 6. DistributedSampler + DataLoader: the ranks' shares partition the shuffled dataset
ds = TensorDataset(ndgrad.arange(float(10 * N + 1)))
sampler = DistributedSampler(ds, seed=3)
sampler.set_epoch(1)
seen = [v for (b,) in DataLoader(ds, batch_size=4, sampler=sampler) for v in b.tolist()]
allseen = [None] * N
dist.all_gather_object(allseen, seen)
flat = sorted(v for s in allseen for v in s)
assert set(flat) == set(float(i) for i in range(10 * N + 1)) and len(flat) == len(sampler) * N
checks += 1

# 7. errors with torch's words
for build, words in ((lambda: DDP(nn.ReLU()), "doesn't have any parameter that requires"),
                     (lambda: DDP(nn.Linear(2, 2), device_ids=[0]), "device_ids and output_"),
                     (lambda: DDP(nn.Linear(2, 2 + R % 2)), "DDP expects same model")):
    try:
        build()
    except (RuntimeError, ValueError) as e:
        assert words in str(e), str(e)
        checks += 1
    else:
        if not (N == 1 and "same model" in words):
            raise AssertionError(words)

dist.destroy_process_group()
print(f"RANK {R} OK {checks}", flush=True)
sys.exit(0)
