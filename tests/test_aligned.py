"""Large arrays ndgrad makes sit at 64-byte boundaries (Note [Aligned arrays] in
ndgrad/_aligned.py), and nothing else about them changes: values and bits, ownership for the
in-place paths, views, storage, sharing with NumPy, pickling and ``torch.save``."""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest
import torch

import ndgrad
import ndgrad.nn.functional as F
from ndgrad import _aligned
from ndgrad._refcounts import SOLE_REFERENCE_TESTS
from ndgrad.autograd import engine
from ndgrad.ops import pointwise

RNG = np.random.default_rng(24)
ROWS, COLS = 768, 768            # float32: 2.25 MiB, above MIN_BYTES (2 MiB)


def _big(dtype=np.float32, shape=(ROWS, COLS)) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def _unaligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` 16 bytes past a 64-byte boundary."""
    buf = np.empty(a.nbytes + 128, np.uint8)
    off = (-buf.ctypes.data % 64) + 16
    out = buf[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _addr(a: np.ndarray) -> int:
    return a.ctypes.data % _aligned.ALIGN


def test_empty_copy_and_the_size_threshold():
    a = _aligned.empty((ROWS, COLS), np.float32)
    assert _addr(a) == 0 and type(a) is np.ndarray and a.flags.c_contiguous
    assert a.flags.writeable and _aligned.owns_memory(a)
    small = _aligned.empty((4, 4), np.float32)
    assert small.base is None                      # plain np.empty below MIN_BYTES
    src = _unaligned(_big(np.float64))
    c = _aligned.copy(src)
    assert _addr(c) == 0 and np.array_equal(c, src) and not np.shares_memory(c, src)
    f = _aligned.copy(np.asfortranarray(src))
    assert f.flags.f_contiguous and _addr(f) == 0 and np.array_equal(f, src)
    strided = src[:, ::2]
    s = _aligned.copy(strided)                     # neither layout: NumPy's own copy
    assert np.array_equal(s, strided) and s.base is None


@pytest.mark.skipif(not SOLE_REFERENCE_TESTS, reason="reference counts not verified here")
def test_owns_memory_sees_other_holders():
    a = _aligned.empty((ROWS, COLS), np.float32)
    assert _aligned.owns_memory(a)
    blk = a.base
    assert not _aligned.owns_memory(a)            # someone holds the block
    del blk
    v = a[1:]
    assert v.base is a                             # views hang on the array, not the block
    assert not _aligned.owns_memory(v) and _aligned.owns_memory(a)


def test_tensor_copies_are_aligned_and_own_their_storage():
    src = _unaligned(_big())
    t = ndgrad.tensor(src, requires_grad=True)
    ref = torch.tensor(src)
    assert t.data_ptr() % 64 == 0
    assert np.array_equal(t.detach().numpy(), src)
    assert not np.shares_memory(t.detach().numpy(), src)
    assert t.storage_offset() == ref.storage_offset() == 0
    assert t.untyped_storage().nbytes() == ref.untyped_storage().nbytes()
    v = t.detach()[3:, 5:]
    rv = ref[3:, 5:]
    assert v.storage_offset() == rv.storage_offset()
    assert v.untyped_storage().nbytes() == rv.untyped_storage().nbytes()
    assert v.untyped_storage().data_ptr() == t.data_ptr()
    c = ndgrad.tensor(t)                           # copy of a tensor (torch warns as well)
    assert c.data_ptr() % 64 == 0 and c.data_ptr() != t.data_ptr()
    assert ndgrad.tensor(t.detach().numpy()[:, :7]).storage_offset() == 0


def test_numpy_and_from_numpy_share_an_aligned_tensor():
    t = ndgrad.tensor(_big())
    a = t.numpy()
    u = ndgrad.from_numpy(a)
    a[0, 0] = 123.0
    assert t[0, 0].item() == 123.0 and u[0, 0].item() == 123.0
    assert u.data_ptr() == t.data_ptr() and u.storage_offset() == 0
    w = ndgrad.as_tensor(a)
    assert w.data_ptr() == t.data_ptr()


def test_pickle_and_torch_save_round_trips():
    t = ndgrad.tensor(_big(), requires_grad=True)
    p = pickle.loads(pickle.dumps(t))
    assert p.requires_grad and np.array_equal(p.detach().numpy(), t.detach().numpy())
    buf = io.BytesIO()
    ndgrad.save({"w": t.detach(), "view": t.detach()[2:]}, buf)
    buf.seek(0)
    got = torch.load(buf)
    assert torch.equal(got["w"], torch.from_numpy(t.detach().numpy()))
    assert got["w"].untyped_storage().nbytes() == t.detach().numpy().nbytes  # no padding
    assert got["view"].storage_offset() == 2 * COLS
    assert got["view"].untyped_storage().data_ptr() == got["w"].untyped_storage().data_ptr()
    buf.seek(0)
    back = ndgrad.load(buf)
    assert np.array_equal(back["w"].numpy(), t.detach().numpy())
    assert back["view"].storage_offset() == 2 * COLS


def test_products_relu_and_sub_results_are_aligned_with_numpy_bits():
    x = _unaligned(_big(shape=(ROWS, 64)))
    w = _unaligned(_big(shape=(64, COLS)))
    xt, wt = ndgrad.tensor(x), ndgrad.tensor(w)
    p = xt @ wt
    assert p.data_ptr() % 64 == 0
    assert np.array_equal(p.numpy(), np.matmul(x, w))
    assert ndgrad.mm(xt, wt).data_ptr() % 64 == 0
    r = F.relu(p)                                  # a new array (not the wrapper's in place)
    assert r.data_ptr() % 64 == 0 and r.data_ptr() != p.data_ptr()
    assert np.array_equal(r.numpy(), np.maximum(np.matmul(x, w), 0))
    q = _unaligned(_big())
    d = p - ndgrad.from_numpy(q)
    assert d.data_ptr() % 64 == 0
    assert np.array_equal(d.numpy(), np.matmul(x, w) - q)
    # other dtypes and small products keep NumPy's own arrays
    assert np.array_equal((xt.double() @ wt.double()).numpy(), np.matmul(x, w, dtype=np.float64))
    assert (xt[:4] @ wt[:, :4])._data.base is None


def test_threshold_backward_aligned_same_bits():
    g = _unaligned(_big())
    r = _big()
    r[::7] = -0.0
    r[1, 1] = np.nan
    out = ndgrad.ops.pointwise.threshold_backward(ndgrad.from_numpy(g), ndgrad.from_numpy(r))
    assert out.data_ptr() % 64 == 0
    want = torch.ops.aten.threshold_backward(torch.from_numpy(g), torch.from_numpy(r), 0.0)
    assert np.array_equal(out.numpy().view(np.int32), want.numpy().view(np.int32))


def test_mlp_step_gradients_are_aligned_and_match_torch(monkeypatch):
    x, t = _big(), _big()
    ws = [_big() * 0.05, _big() * 0.05]
    into = []
    relu_into = pointwise.RELU_INTO.forward
    monkeypatch.setattr(pointwise.RELU_INTO, "forward", lambda a: into.append(a) or relu_into(a))
    nx, nt = ndgrad.tensor(x), ndgrad.tensor(t)
    nws = [ndgrad.tensor(w, requires_grad=True) for w in ws]
    d = ndgrad.relu(nx @ nws[0]) @ nws[1] - nt
    (d * d).mean().backward()
    tws = [torch.tensor(w, requires_grad=True) for w in ws]
    td = torch.relu(torch.tensor(x) @ tws[0]) @ tws[1] - torch.tensor(t)
    (td * td).mean().backward()
    if SOLE_REFERENCE_TESTS:
        assert len(into) == 1                     # relu still wrote into the aligned product
    for nw, tw in zip(nws, tws):
        assert nw.grad.data_ptr() % 64 == 0
        np.testing.assert_allclose(nw.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.skipif(not SOLE_REFERENCE_TESTS, reason="reference counts not verified here")
def test_engine_sums_aligned_gradients_in_place(monkeypatch):
    x = ndgrad.tensor(_big(shape=(ROWS, 64)))
    w = ndgrad.tensor(_big(shape=(64, COLS)), requires_grad=True)
    a, b = ndgrad.tensor(_big(shape=(COLS, 8))), ndgrad.tensor(_big(shape=(COLS, 8)))
    adds = []
    real = engine._np_add
    monkeypatch.setattr(engine, "_np_add",
                        lambda p, q, out: adds.append(out) or real(p, q, out=out))
    y = x @ w                  # y's two gradients are products: aligned, summed in place
    ((y @ a).sum() + (y @ b).sum()).backward()
    assert len(adds) == 1 and adds[0].base.__class__ is _aligned.AlignedBlock
    tx, ta, tb = (torch.tensor(v.numpy()) for v in (x, a, b))
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    ty = tx @ tw
    ((ty @ ta).sum() + (ty @ tb).sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-2)


def test_inplace_updates_and_overlap_errors_on_aligned_tensors():
    p = ndgrad.tensor(_big())
    q = ndgrad.tensor(_big())
    want = p.numpy() + q.numpy()
    with ndgrad.no_grad():
        p.add_(q)
    assert np.array_equal(p.numpy(), want) and p._version == 1
    a = _big()
    tt = torch.tensor(a)
    nt = ndgrad.tensor(a)
    with pytest.raises(RuntimeError) as te:
        torch.add(tt[:-1], 1, out=tt[1:])
    with pytest.raises(RuntimeError) as ne:
        ndgrad.add(nt[:-1], 1, out=nt[1:])
    assert "refer to a single memory location" in str(te.value)
    assert "refer to a single memory location" in str(ne.value)


def test_compiled_step_writes_products_into_aligned_results():
    x, t = _big(), _big()
    ws = [_big() * 0.05, _big() * 0.05]

    def step(x, t, w1, w2):
        d = ndgrad.relu(x @ w1) @ w2 - t
        out = (d * d).mean()
        return out.detach(), tuple(ndgrad.autograd.grad(out, [w1, w2]))

    args = [ndgrad.tensor(x), ndgrad.tensor(t)] + [ndgrad.tensor(w, requires_grad=True)
                                                   for w in ws]
    fn = ndgrad.compile(step)
    eager = step(*args)
    fn(*args)
    got = fn(*args)
    assert "_aligned_empty" in fn.code
    for g, e in zip(got[1], eager[1]):
        assert g.data_ptr() % 64 == 0
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def test_storage_ops_on_an_aligned_tensor_match_torch():
    a = _big()
    t, tt = ndgrad.tensor(a), torch.tensor(a)
    v, tv = t.view(-1)[100:], tt.view(-1)[100:]
    # as_strided counts from the storage's start: the aligned array's first element
    assert np.array_equal(ndgrad.as_strided(v, (5,), (1,), 0).numpy(),
                          torch.as_strided(tv, (5,), (1,), 0).numpy())
    s, ts = ndgrad.empty(0), torch.empty(0)
    s.set_(t.untyped_storage(), 512, (10,), (1,))
    ts.set_(tt.untyped_storage(), 512, (10,), (1,))
    assert np.array_equal(s.numpy(), ts.numpy())
    t, tt = ndgrad.tensor(a), torch.tensor(a)
    t.resize_(900, COLS)
    tt.resize_(900, COLS)
    assert t.untyped_storage().nbytes() == tt.untyped_storage().nbytes()
    assert np.array_equal(t.numpy()[:ROWS], a)
    u = ndgrad.tensor(a).share_memory_()
    assert u.is_shared() and np.array_equal(u.numpy(), a)


def test_clone_contiguous_and_kept_gradient_copies_are_aligned():
    a = _unaligned(_big())
    t = ndgrad.from_numpy(a)
    c = t.clone()
    assert c.data_ptr() % 64 == 0 and np.array_equal(c.numpy(), a)
    f = ndgrad.from_numpy(np.asfortranarray(a))
    assert f.clone().numpy().flags.f_contiguous            # order K, as torch's clone
    assert f.clone().stride() == torch.from_numpy(np.asfortranarray(a)).clone().stride()
    k = f.contiguous()
    assert k.data_ptr() % 64 == 0 and k.is_contiguous() and np.array_equal(k.numpy(), a)
    assert ndgrad.empty_like(t).data_ptr() % 64 == 0
    w = ndgrad.tensor(a, requires_grad=True)
    g = ndgrad.from_numpy(_unaligned(_big()))
    kept = g * 1                 # held here: AccumulateGrad copies it instead of stealing
    w.backward(kept)
    assert w.grad.data_ptr() % 64 == 0 and w.grad.data_ptr() != kept.data_ptr()
    assert np.array_equal(w.grad.numpy(), kept.numpy())
