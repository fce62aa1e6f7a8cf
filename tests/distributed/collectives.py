"""Launched by tests/test_distributed.py with 2 and 4 ranks: every collective of
ndgrad.distributed against a NumPy reference computed from every rank's known inputs."""

import datetime
import sys
import warnings

import ml_dtypes
import numpy as np

import ndgrad
import ndgrad.distributed as dist
from ndgrad.distributed.nn import functional as dfn

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
R, N = dist.get_rank(), dist.get_world_size()
checks = 0


def data(rank, shape=(3, 4), dtype=np.float64, salt=0):
    """The input of ``rank`` (every rank can compute every other rank's)."""
    rng = np.random.default_rng(1000 * rank + salt)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def same(got, want, tol=1e-12):
    global checks
    got = np.asarray(got.detach().numpy() if isinstance(got, ndgrad.Tensor) else got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind in "fc" or want.dtype.kind in "fc":
        np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128),
                                   rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)
    checks += 1


def raises(exc, words, fn):
    global checks
    try:
        fn()
    except exc as e:
        assert words in str(e), (words, str(e))
        checks += 1
        return
    raise AssertionError(f"no {exc.__name__} ({words})")


T = ndgrad.from_numpy
ALL = [data(r) for r in range(N)]

# all_reduce: every op on its dtypes, blocking and async
Op = dist.ReduceOp
REF = {Op.SUM: lambda a: sum(a[1:], a[0].copy()), Op.PRODUCT: lambda a: np.prod(a, axis=0),
       Op.MIN: lambda a: np.min(a, axis=0), Op.MAX: lambda a: np.max(a, axis=0),
       Op.AVG: lambda a: np.mean(a, axis=0), Op.BAND: lambda a: np.bitwise_and.reduce(a),
       Op.BOR: lambda a: np.bitwise_or.reduce(a), Op.BXOR: lambda a: np.bitwise_xor.reduce(a)}
for dt, ops in ((np.float64, [Op.SUM, Op.PRODUCT, Op.MIN, Op.MAX, Op.AVG]),
                (np.float32, [Op.SUM, Op.MAX]), (np.int64, [Op.SUM, Op.BAND, Op.BOR, Op.BXOR]),
                (np.int32, [Op.MIN, Op.PRODUCT]), (np.complex128, [Op.SUM, Op.PRODUCT])):
    ins = [data(r, dtype=dt, salt=5) for r in range(N)]
    for op in ops:
        t = T(ins[R].copy())
        dist.all_reduce(t, op=op)
        same(t, REF[op](np.stack(ins)).astype(dt), 1e-5 if dt == np.float32 else 1e-12)
        t = T(ins[R].copy())
        w = dist.all_reduce(t, op=op, async_op=True)
        w.wait()
        assert w.is_completed() and w.is_success() and w.exception() is None
        same(t, REF[op](np.stack(ins)).astype(dt), 1e-5 if dt == np.float32 else 1e-12)
bins = [data(r, dtype=np.bool_, salt=6) for r in range(N)]
t = T(bins[R].copy())
dist.all_reduce(t)                            # SUM on bool is a logical or
same(t, np.any(bins, axis=0))
t = T(bins[R].copy())
dist.all_reduce(t, op=Op.MIN)
same(t, np.all(bins, axis=0))
hins = [data(r, dtype=np.float32, salt=7).astype(ml_dtypes.bfloat16) for r in range(N)]
t = T(hins[R].copy())
dist.all_reduce(t)
same(t.float(), sum(h.astype(np.float32) for h in hins).astype(ml_dtypes.bfloat16)
     .astype(np.float32), 1e-6)
nc = T(ALL[R].copy()).t()                     # a non-contiguous view is reduced in place
dist.all_reduce(nc)
same(nc, sum(ALL).T)
raises(ValueError, "all_reduce does not support RedOpType.MAX on complex tensors",
       lambda: dist.all_reduce(ndgrad.ones(2, dtype=ndgrad.complex64), op=Op.MAX))
raises(RuntimeError, "non-integral", lambda: dist.all_reduce(ndgrad.ones(2), op=Op.BAND))
x = ndgrad.ones(3, requires_grad=True)
dist.all_reduce(x * 2)                         # not differentiable, like torch: no error

# broadcast, reduce
for src in range(N):
    t = T(ALL[R].copy())
    dist.broadcast(t, src=src)
    same(t, ALL[src])
    t = T(ALL[R].copy())
    dist.reduce(t, dst=src, op=Op.MAX)
    same(t, np.max(ALL, axis=0) if R == src else ALL[R])
t = T(ALL[R].copy())
dist.broadcast(t, src=N - 1, async_op=True).wait()
same(t, ALL[N - 1])

# all_gather, all_gather_into_tensor, reduce_scatter(_tensor), gather, scatter
outs = [ndgrad.zeros(3, 4, dtype=ndgrad.float64) for _ in range(N)]
dist.all_gather(outs, T(ALL[R]))
for r in range(N):
    same(outs[r], ALL[r])
cat = ndgrad.zeros(3 * N, 4, dtype=ndgrad.float64)
dist.all_gather_into_tensor(cat, T(ALL[R]))
same(cat, np.concatenate(ALL))
stk = ndgrad.zeros(N, 3, 4, dtype=ndgrad.float64)
dist.all_gather_into_tensor(stk, T(ALL[R]), async_op=True).wait()
same(stk, np.stack(ALL))
big = [data(r, shape=(2 * N, 3), salt=8) for r in range(N)]
o = ndgrad.zeros(2, 3, dtype=ndgrad.float64)
dist.reduce_scatter_tensor(o, T(big[R]))
same(o, sum(big)[2 * R:2 * R + 2])
o = ndgrad.zeros(2, 3, dtype=ndgrad.float64)
dist.reduce_scatter(o, [T(big[R][2 * i:2 * i + 2]) for i in range(N)], op=Op.MIN)
same(o, np.min(big, axis=0)[2 * R:2 * R + 2])
for root in {0, N - 1}:
    gl = [ndgrad.zeros(3, 4, dtype=ndgrad.float64) for _ in range(N)] if R == root else None
    dist.gather(T(ALL[R]), gl, dst=root)
    if R == root:
        for r in range(N):
            same(gl[r], ALL[r])
    t = ndgrad.zeros(3, 4, dtype=ndgrad.float64)
    sl = [T(data(root, salt=20 + i)) for i in range(N)] if R == root else None
    dist.scatter(t, sl, src=root)
    same(t, data(root, salt=20 + R))
raises(ValueError, "must NOT be specified on non-destination ranks" if R else
       "must be specified on destination rank",
       lambda: dist.gather(ndgrad.zeros(2), [ndgrad.zeros(2)] * N if R else None, dst=0))
raises(RuntimeError, "invalid output tensor list",
       lambda: dist.all_gather([ndgrad.zeros(2)] * (N + 1), ndgrad.zeros(2)))
raises(RuntimeError, "invalid root rank: 9", lambda: dist.broadcast(ndgrad.zeros(2), src=9))

# all_to_all (uneven sizes), all_to_all_single (uneven splits)
ins = [T(data(R, shape=(R + 1, j + 1), salt=30 + j)) for j in range(N)]
outs = [ndgrad.zeros(i + 1, R + 1, dtype=ndgrad.float64) for i in range(N)]
dist.all_to_all(outs, ins)
for i in range(N):
    same(outs[i], data(i, shape=(i + 1, R + 1), salt=30 + R))
in_splits = [(R + j) % 3 + 1 for j in range(N)]
out_splits = [(i + R) % 3 + 1 for i in range(N)]
src = data(R, shape=(sum(in_splits), 2), salt=40)
out = ndgrad.zeros(sum(out_splits), 2, dtype=ndgrad.float64)
dist.all_to_all_single(out, T(src), out_splits, in_splits)
want = []
for i in range(N):
    their = [(i + j) % 3 + 1 for j in range(N)]
    block = data(i, shape=(sum(their), 2), salt=40)
    start = sum(their[:R])
    want.append(block[start:start + their[R]])
same(out, np.concatenate(want))
eq = ndgrad.zeros(2 * N, dtype=ndgrad.float64)
dist.all_to_all_single(eq, T(np.arange(2.0 * N) + 100 * R))
same(eq, np.concatenate([np.arange(2.0 * R, 2.0 * R + 2) + 100 * i for i in range(N)]))
dist.barrier()
dist.barrier(async_op=True).wait()

# point to point: ring send/recv, isend/irecv from any source, batch_isend_irecv
nxt, prv = (R + 1) % N, (R - 1) % N
if R % 2 == 0:
    dist.send(T(ALL[R]), nxt, tag=3)
    t = ndgrad.zeros(3, 4, dtype=ndgrad.float64)
    assert dist.recv(t, prv, tag=3) == prv
else:
    t = ndgrad.zeros(3, 4, dtype=ndgrad.float64)
    assert dist.recv(t, prv, tag=3) == prv
    dist.send(T(ALL[R]), nxt, tag=3)
same(t, ALL[prv])
if R == 0:
    got = {}
    for _ in range(N - 1):
        t = ndgrad.zeros(3, 4, dtype=ndgrad.float64)
        w = dist.irecv(t, tag=7)
        w.wait()
        got[w.source_rank()] = t
    for r in range(1, N):
        same(got[r], ALL[r])
else:
    dist.isend(T(ALL[R]), 0, tag=7).wait()
recvd = ndgrad.zeros(3, 4, dtype=ndgrad.float64)
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, T(ALL[R]), nxt),
                                dist.P2POp(dist.irecv, recvd, prv)])
for w in works:
    w.wait()
same(recvd, ALL[prv])
if R == 0:                                       # a mismatched message raises on the receiver
    dist.send(ndgrad.ones(5, dtype=ndgrad.float64), 1)
    dist.send(ndgrad.ones(3, dtype=ndgrad.float64), 1)
    dist.send(ndgrad.ones(2, dtype=ndgrad.int64), 1)
elif R == 1:
    t = ndgrad.zeros(3, dtype=ndgrad.float64)
    raises(RuntimeError, "larger than the tensor", lambda: dist.recv(t, 0))
    raises(RuntimeError, "does not match", lambda: dist.recv(ndgrad.zeros(4,
                                                                          dtype=ndgrad.float64), 0))
    raises(RuntimeError, "another dtype", lambda: dist.recv(ndgrad.zeros(2,
                                                                         dtype=ndgrad.float64), 0))
    same(t, np.zeros(3))                           # untouched
raises(ValueError, "should not be the same", lambda: dist.send(ndgrad.ones(1), R))

# objects
objs = [None] * N
dist.all_gather_object(objs, {"rank": R, "x": [R] * R})
assert objs == [{"rank": r, "x": [r] * r} for r in range(N)]
lst = [R, "a"] if R == 1 else [None, None]
dist.broadcast_object_list(lst, src=1)
assert lst == [1, "a"]
gl = [None] * N if R == 0 else None
dist.gather_object(("g", R), gl, dst=0)
assert R != 0 or gl == [("g", r) for r in range(N)]
out = [None]
dist.scatter_object_list(out, [f"s{r}" for r in range(N)] if R == 0 else None, src=0)
assert out == [f"s{R}"]
checks += 4

# mismatched collectives: every rank raises, the data is untouched, the group goes on
t = T(np.full(2 + R % 2, float(R)))
raises(RuntimeError, "Detected mismatch between collectives", lambda: dist.all_reduce(t))
same(t, np.full(2 + R % 2, float(R)))
op = dist.all_reduce if R == 0 else dist.broadcast
raises(RuntimeError, "Detected mismatch between collectives",
       lambda: op(ndgrad.zeros(2), 0) if R else op(ndgrad.zeros(2)))
t = T(ALL[R].copy())
dist.all_reduce(t)
same(t, sum(ALL))

# groups
evens = list(range(0, N, 2))
g = dist.new_group(evens)
if R in evens:
    assert dist.get_world_size(g) == len(evens) and dist.get_rank(g) == evens.index(R)
    assert dist.get_process_group_ranks(g) == evens
    t = T(ALL[R].copy())
    dist.all_reduce(t, group=g)
    same(t, sum(ALL[r] for r in evens))
    t = T(ALL[R].copy())
    dist.broadcast(t, src=evens[-1], group=g)
    same(t, ALL[evens[-1]])
else:
    assert g == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert dist.all_reduce(ndgrad.ones(1), group=g) is None
    assert "does not belong to the given group" in str(rec[0].message)
    checks += 2
assert dist.group.WORLD is dist.GroupMember.WORLD and dist.get_backend() == "mpi"

# differentiable collectives: forward values and gradients against NumPy
x = ndgrad.tensor(ALL[R], requires_grad=True)
y = dfn.all_reduce(x * x)
(y * T(data(R, salt=50))).sum().backward()
same(y, sum(a * a for a in ALL))
same(x.grad, 2 * ALL[R] * sum(data(r, salt=50) for r in range(N)))
x = ndgrad.tensor(ALL[R], requires_grad=True)
parts = dfn.all_gather(x)
sum((p * T(data(R, salt=60 + i))).sum() for i, p in enumerate(parts)).backward()
same(x.grad, sum(data(r, salt=60 + R) for r in range(N)))
x = ndgrad.tensor(ALL[R], requires_grad=True)
y = dfn.broadcast(x, src=N - 1)
y.sum().backward()
same(y, ALL[N - 1])
same(x.grad, np.full((3, 4), float(N)) if R == N - 1 else np.zeros((3, 4)))
x = ndgrad.tensor(ALL[R], requires_grad=True)
outs = dfn.all_to_all([ndgrad.zeros(3, 4, dtype=ndgrad.float64) for _ in range(N)],
                      [x * (j + 1) for j in range(N)])
sum(o.sum() * (i + 1) for i, o in enumerate(outs)).backward()
same(outs[0], ALL[0] * (R + 1))
same(x.grad, np.full((3, 4), float(sum((j + 1) * (R + 1) for j in range(N)))))
x = ndgrad.tensor(big[R], requires_grad=True)
y = dfn.reduce_scatter(ndgrad.zeros(2, 3, dtype=ndgrad.float64),
                       list(x.split(2)))
(y * (R + 1)).sum().backward()
same(y, sum(big)[2 * R:2 * R + 2])
same(x.grad, np.repeat(np.arange(1.0, N + 1), 2)[:, None] * np.ones((1, 3)))

x = ndgrad.tensor(ALL[R], requires_grad=True)          # reduce: the gradient is broadcast
y = dfn.reduce(x * 2, dst=0)
(y * (R + 1)).sum().backward()
if R == 0:
    same(y, 2 * sum(ALL))
same(x.grad, np.full((3, 4), 2.0))                     # rank 0's output gradient (1) x 2
x = ndgrad.tensor(ALL[R], requires_grad=True)          # gather <-> scatter
parts = dfn.gather(x, dst=N - 1)
sum((p * (i + 1)).sum() for i, p in enumerate(parts)).backward()
if R == N - 1:
    for r in range(N):
        same(parts[r], ALL[r])
same(x.grad, np.full((3, 4), float(R + 1)))
xs = [ndgrad.tensor(data(R, salt=70 + i), requires_grad=True) for i in range(N)]
y = dfn.scatter(xs, src=0)
(y * (R + 1)).sum().backward()
same(y, data(0, salt=70 + R))
for i in range(N):
    same(xs[i].grad, np.full((3, 4), float(i + 1)) if R == 0 else np.zeros((3, 4)))
x = ndgrad.tensor(ALL[R], requires_grad=True)          # all_gather_into_tensor
y = dfn.all_gather_into_tensor(ndgrad.zeros(3 * N, 4, dtype=ndgrad.float64), x)
(y * T(np.repeat(np.arange(1.0, N + 1), 3)[:, None] * np.ones(4))).sum().backward()
same(y, np.concatenate(ALL))
same(x.grad, np.full((3, 4), float(N * (R + 1))))
x = ndgrad.tensor(np.arange(2.0 * N) + 10 * R, requires_grad=True)   # all_to_all_single
y = dfn.all_to_all_single(ndgrad.zeros(2 * N, dtype=ndgrad.float64), x)
(y * T(np.arange(1.0, 2 * N + 1))).sum().backward()
same(y, np.concatenate([np.arange(2.0 * R, 2.0 * R + 2) + 10 * i for i in range(N)]))
same(x.grad, np.concatenate([np.arange(2.0 * R + 1, 2.0 * R + 3) for _ in range(N)]))

dist.destroy_process_group()
print(f"RANK {R} OK {checks}", flush=True)
sys.exit(0)
