"""ndgrad.utils.data against torch.utils.data: the same indices in the same order for the same
seed (generators, the global seed, samplers, random_split), default_collate's structures and
dtypes, worker processes giving the batches of the main process, argument errors."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ndgrad
import ndgrad.utils.data as nud


def _pair(n=10):
    x = np.arange(2 * n, dtype=np.float64).reshape(n, 2)
    y = np.arange(n)
    return (nud.TensorDataset(ndgrad.tensor(x), ndgrad.tensor(y)),
            tud.TensorDataset(torch.tensor(x), torch.tensor(y)))


def _indices(loader):
    return [b[1].tolist() for b in loader]


def test_randperm_and_randint_are_torchs():
    for seed in (0, 42, 2 ** 40 + 7):
        for n in (1, 2, 17, 1000):
            assert ndgrad.randperm(n, generator=ndgrad.Generator().manual_seed(seed)).tolist() \
                == torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
        assert ndgrad.randint(-3, 9, (20,), generator=ndgrad.Generator().manual_seed(seed)
                              ).tolist() == \
            torch.randint(-3, 9, (20,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("kw", [dict(batch_size=3, shuffle=True),
                                dict(batch_size=4, shuffle=True, drop_last=True),
                                dict(batch_size=None, shuffle=True),
                                dict(batch_size=3)])
def test_loader_order_with_generator(kw):
    nds, tds = _pair()
    n = nud.DataLoader(nds, generator=ndgrad.Generator().manual_seed(5), **kw)
    t = tud.DataLoader(tds, generator=torch.Generator().manual_seed(5), **kw)
    if kw.get("batch_size", 1) is None:
        assert [b[1].item() for b in n] == [b[1].item() for b in t]
        assert [b[1].item() for b in n] == [b[1].item() for b in t]   # second epoch
    else:
        assert _indices(n) == _indices(t)
        assert _indices(n) == _indices(t)
        assert len(n) == len(t)


def test_loader_order_with_global_seed():
    nds, tds = _pair(13)
    ndgrad.manual_seed(11)
    torch.manual_seed(11)
    n = nud.DataLoader(nds, batch_size=4, shuffle=True)
    t = tud.DataLoader(tds, batch_size=4, shuffle=True)
    for _ in range(3):
        assert _indices(n) == _indices(t)


@pytest.mark.parametrize("make", [
    lambda m, ds, g: m.RandomSampler(ds, generator=g),
    lambda m, ds, g: m.RandomSampler(ds, replacement=True, num_samples=70, generator=g),
    lambda m, ds, g: m.RandomSampler(ds, num_samples=23, generator=g),
    lambda m, ds, g: m.SubsetRandomSampler([3, 1, 4, 1, 5, 9], generator=g),
    lambda m, ds, g: m.BatchSampler(m.RandomSampler(ds, generator=g), 4, drop_last=False),
    lambda m, ds, g: m.SequentialSampler(ds),
    lambda m, ds, g: m.WeightedRandomSampler([0.5, 2.0, 0.0, 1.0, 3.5], 40, generator=g),
    lambda m, ds, g: m.WeightedRandomSampler([0.5, 2.0, 0.1, 1.0, 3.5], 4, replacement=False,
                                             generator=g),
])
def test_samplers_match_torch(make):
    nds, tds = _pair()
    n = make(nud, nds, ndgrad.Generator().manual_seed(3))
    t = make(tud, tds, torch.Generator().manual_seed(3))
    assert list(n) == list(t)
    assert len(n) == len(t)


def test_random_split_matches_torch():
    nds, tds = _pair(11)
    for lengths in ([0.5, 0.3, 0.2], [4, 7], [0.9, 0.1]):
        n = nud.random_split(nds, lengths, generator=ndgrad.Generator().manual_seed(1))
        t = tud.random_split(tds, lengths, generator=torch.Generator().manual_seed(1))
        assert [list(s.indices) for s in n] == [list(s.indices) for s in t]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        nud.random_split(nds, [3, 3])


Point = collections.namedtuple("Point", "x y")


@pytest.mark.parametrize("batch", [
    [(np.array([1.0, 2.0]), 0), (np.array([3.0, 4.0]), 1)],
    [{"a": 1.5, "b": [1, 2]}, {"a": 2.5, "b": [3, 4]}],
    [Point(1, 2.0), Point(3, 4.0)],
    [np.float32(1.5), np.float32(2.5)],
    [True, False],
    [["x", 1], ["y", 2]],
])
def test_default_collate_like_torch(batch):
    n = nud.default_collate(batch)
    t = tud.default_collate(batch)

    def same(a, b):
        if isinstance(b, torch.Tensor):
            assert isinstance(a, ndgrad.Tensor)
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        elif isinstance(b, dict):
            assert type(a) is type(b) and list(a) == list(b)
            for k in b:
                same(a[k], b[k])
        elif isinstance(b, (list, tuple)):
            assert type(a) is type(b) and len(a) == len(b)
            for x, y in zip(a, b):
                same(x, y)
        else:
            assert a == b
    same(n, t)


def test_default_collate_errors_and_convert():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        nud.default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        nud.default_collate([object(), object()])
    out = nud.default_convert({"a": np.arange(3), "b": (np.float64(2.0),)})
    assert isinstance(out["a"], ndgrad.Tensor) and out["a"].dtype == ndgrad.int64
    assert isinstance(out["b"], list) and out["b"][0].dtype == ndgrad.float64


@pytest.mark.parametrize("kw,msg", [
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified"),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(shuffle=True, sampler=[0, 1]), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_size=2, batch_sampler=[[0, 1]]), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
])
def test_loader_argument_errors_like_torch(kw, msg):
    nds, tds = _pair()
    for m, ds in ((tud, tds), (nud, nds)):
        with pytest.raises(ValueError, match=msg):
            m.DataLoader(ds, **kw)
    loader = nud.DataLoader(nds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after"):
        loader.batch_size = 3


class _Stream(nud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = nud.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


class _TorchStream(tud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = tud.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def test_workers_give_the_same_batches():
    nds, _ = _pair(11)
    ndgrad.manual_seed(4)
    single = _indices(nud.DataLoader(nds, batch_size=3, shuffle=True))
    ndgrad.manual_seed(4)
    multi = _indices(nud.DataLoader(nds, batch_size=3, shuffle=True, num_workers=2))
    assert single == multi
    persistent = nud.DataLoader(nds, batch_size=4, num_workers=2, persistent_workers=True)
    assert _indices(persistent) == _indices(persistent) == [[0, 1, 2, 3], [4, 5, 6, 7],
                                                             [8, 9, 10]]
    n = [b.tolist() for b in nud.DataLoader(_Stream(11), batch_size=2, num_workers=2)]
    t = [b.tolist() for b in tud.DataLoader(_TorchStream(11), batch_size=2, num_workers=2)]
    assert n == t


class _Failing(nud.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("boom")
        return i


def test_worker_exception_is_reraised_with_its_type():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(nud.DataLoader(_Failing(), num_workers=2))


def test_datasets():
    nds, _ = _pair(4)
    cat = nds + nds
    assert len(cat) == 8 and cat[5][1].item() == 1 and cat[-1][1].item() == 3
    with pytest.raises(ValueError, match="absolute value of index should not exceed"):
        cat[-9]
    sub = nud.Subset(nds, [3, 0])
    assert [s[1].item() for s in sub] == [3, 0]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        nud.TensorDataset(ndgrad.zeros(3), ndgrad.zeros(4))
    stacked = nud.StackDataset(a=nds, b=nds)
    assert set(stacked[1]) == {"a", "b"}
    chain = nud.ChainDataset([_Stream(3), _Stream(2)])
    assert list(chain) == [0, 1, 2, 0, 1]
