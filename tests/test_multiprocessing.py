"""``ndgrad.multiprocessing`` and ``Tensor.share_memory_``: the standard API re-exported as
torch.multiprocessing does, shared tensors seen by several processes (Hogwild training with
``fork`` and with ``spawn``, tensors sent through queues by handle), no leaked shared-memory
segments or descriptors, and ``spawn``'s errors as torch's."""

import gc
import multiprocessing as std_mp
import os
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch
import torch.multiprocessing as tmp

import ndgrad
import ndgrad.multiprocessing as mp
import _mp_workers as W


def _named_segments():
    """Named shared memory ndgrad could have left: ``/dev/shm`` entries of ndgrad or of
    ``multiprocessing.shared_memory`` (``psm_*``). ndgrad names none (Note [Shared memory])."""
    names = os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []
    return sorted(n for n in names if "ndgrad" in n or n.startswith("psm_"))


def _blocks_held():
    """This process's descriptors and mappings of ndgrad's shared blocks."""
    fds = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds += "ndgrad-shared" in os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    with open("/proc/self/maps") as f:
        maps = sum("ndgrad-shared" in line for line in f)
    return fds, maps


def _model():
    ndgrad.manual_seed(0)
    return ndgrad.nn.Linear(3, 1)


def test_reexports_the_standard_api_like_torch():
    missing = [n for n in tmp.__all__ if not hasattr(mp, n)]
    assert missing == []
    assert set(tmp.__all__) <= set(mp.__all__)
    assert mp.Process is std_mp.Process and mp.Pool is std_mp.Pool
    assert mp.get_context("spawn").get_start_method() == "spawn"
    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(AssertionError, match="invalid sharing strategy 'x'"):
        mp.set_sharing_strategy("x")
    with pytest.raises(AssertionError, match="invalid sharing strategy 'x'"):
        tmp.set_sharing_strategy("x")
    assert ndgrad.multiprocessing is mp


def test_share_memory_keeps_values_views_and_dtypes():
    for dt in (ndgrad.float32, ndgrad.bfloat16, ndgrad.int64, ndgrad.bool):
        t = ndgrad.arange(6).reshape(2, 3).to(dt)
        before = t.tolist()
        assert not t.is_shared()
        assert t.share_memory_() is t and t.is_shared()
        assert t.tolist() == before and t.dtype == dt and t.stride() == (3, 1)
    base = ndgrad.arange(6.0)
    v = base[2:5]
    v.share_memory_()                       # moves the storage, the base with it (as torch)
    assert base.is_shared() and np.shares_memory(base._data, v._data)
    assert v.storage_offset() == 2
    v.add_(10)
    assert base.tolist() == [0, 1, 12, 13, 14, 5]
    tt = torch.arange(6.0)
    assert tt[2:5].share_memory_().is_shared() and tt.is_shared()
    e = ndgrad.zeros(0).share_memory_()
    assert e.is_shared() and e.shape == (0,)


def test_module_share_memory_moves_parameters_grads_and_buffers():
    m = ndgrad.nn.BatchNorm1d(2)
    m(ndgrad.randn(4, 2)).sum().backward()
    assert m.share_memory() is m
    assert all(p.is_shared() and p.grad.is_shared() for p in m.parameters())
    assert all(b.is_shared() for b in m.buffers())
    assert isinstance(m.weight, ndgrad.nn.Parameter)


def test_pickling_by_handle_and_refusals():
    t = ndgrad.arange(4.0).share_memory_()
    back = ForkingPickler.loads(ForkingPickler.dumps(t[1:]))   # same process: same memory
    back.mul_(2)
    assert t.tolist() == [0, 2, 4, 6] and back.is_shared()
    p = ndgrad.nn.Parameter(ndgrad.ones(2)).share_memory_()
    q = ForkingPickler.loads(ForkingPickler.dumps(p))
    assert type(q) is ndgrad.nn.Parameter and q.requires_grad and np.shares_memory(
        q._data, p._data)
    plain = ndgrad.ones(2)                                     # not shared: a copy
    c = ForkingPickler.loads(ForkingPickler.dumps(plain))
    assert not c.is_shared() and not np.shares_memory(c._data, plain._data)
    assert pickle.loads(pickle.dumps(t)).tolist() == t.tolist()   # ordinary pickle: a copy
    x = ndgrad.ones(2, requires_grad=True) * 2
    for y in (x, torch.ones(2, requires_grad=True) * 2):
        with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf "
                                               "tensor which requires_grad"):
            ForkingPickler.dumps(y)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_training_shares_parameters(method):
    shm, held = _named_segments(), _blocks_held()
    model = _model()
    model.share_memory()
    w0 = model.weight.detach().clone()
    ctx = mp.get_context(method)
    lock, queue, steps = ctx.Lock(), ctx.SimpleQueue(), 3
    if method == "spawn":
        mp.spawn(W.hogwild_train, args=(model, lock, steps, queue), nprocs=2)
    else:
        procs = [ctx.Process(target=W.hogwild_train, args=(r, model, lock, steps, queue))
                 for r in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        assert [p.exitcode for p in procs] == [0, 0]
    reports = sorted(queue.get() for _ in range(2))
    assert [r[:2] for r in reports] == [(0, True), (1, True)]
    # each process subtracted lr * (rank + 1) per step from the same memory
    expected = w0 - 0.5 * steps * (1 + 2)
    np.testing.assert_allclose(model.weight.detach().numpy(), expected.numpy(), rtol=1e-6)
    assert _blocks_held()[0] > held[0]
    del model, w0
    gc.collect()
    assert _named_segments() == shm == []
    assert _blocks_held() == held


def test_lock_free_hogwild_regression_learns():
    ndgrad.manual_seed(0)
    x = ndgrad.randn(32, 3)
    y = x @ ndgrad.tensor([[1.0], [-2.0], [0.5]])
    model = _model()
    model.share_memory()
    loss0 = ((model(x) - y) ** 2).mean().item()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=W.regress, args=(r, model, 40, x, y)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert ((model(x) - y) ** 2).mean().item() < 0.2 * loss0


def test_tensor_created_in_child_reaches_parent_by_handle():
    ctx = mp.get_context("fork")
    queue, ready, done = ctx.Queue(), ctx.Event(), ctx.Event()
    p = ctx.Process(target=W.send_new_shared, args=(queue, ready, done))
    p.start()
    view = queue.get(timeout=60)
    assert view.is_shared() and view.shape == (2,)
    view.fill_(7.0)
    done.set()
    assert queue.get(timeout=60) == [0.0, 7.0, 7.0]
    p.join()


def _first_line(e):
    return str(e).strip().splitlines()[0]


@pytest.mark.parametrize("fn, exc", [(W.raise_value_error, "ProcessRaisedException"),
                                     (W.exit_with_code, "ProcessExitedException"),
                                     (W.kill_self, "ProcessExitedException")])
def test_start_processes_errors_match_torch(fn, exc):
    got = []
    for M in (tmp, mp):
        with pytest.raises(getattr(M, exc)) as e:
            M.start_processes(fn, nprocs=2, start_method="fork")
        got.append((_first_line(e.value), e.value.error_index,
                    getattr(e.value, "exit_code", None), getattr(e.value, "signal_name", None)))
        if exc == "ProcessRaisedException":
            assert "ValueError: boom in 1" in str(e.value)
            assert str(e.value).startswith(
                "\n\n-- Process 1 terminated with the following error:\n")
    assert got[1] == got[0]


def test_join_false_returns_a_context():
    ctx = mp.start_processes(W.exit_with_code, nprocs=1, join=False, start_method="fork")
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 1
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        while not ctx.join():
            pass
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        c = mp.spawn(W.exit_with_code, nprocs=0, start_method="fork", join=False)
    assert c.join() is True
