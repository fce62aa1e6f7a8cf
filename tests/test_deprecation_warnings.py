"""Warnings of deprecated calls: torch's text and category, the user's line, warn-once."""

import warnings

import pytest
import torch

import ndgrad
import ndgrad.nn.functional as F
from ndgrad import _warn

_CASES = {
    "cholesky": lambda t: t.cholesky(t.eye(2)),
    "lu": lambda t: t.lu(t.eye(2)),
    "lu_solve": lambda t: t.lu_solve(t.ones(2, 1), *t.linalg.lu_factor(t.eye(2))),
    "qr": lambda t: t.qr(t.eye(2)),
    "qr method": lambda t: t.eye(2).qr(),
    "triangular_solve": lambda t: t.triangular_solve(t.eye(2), t.eye(2)),
    "chain_matmul": lambda t: t.chain_matmul(t.eye(2), t.eye(2)),
    "scatter reduce": lambda t: t.zeros(3).scatter_(0, t.tensor([0]), t.tensor([1.0]),
                                                    reduce="add"),
    "index_reduce": lambda t: t.ones(3).index_reduce(0, t.tensor([0]), t.tensor([2.0]), "prod"),
    "non-tuple index": lambda t: t.ones(3, 3)[[[0, 1], [1, 2]]],
    "uint8 index": lambda t: t.ones(3)[t.tensor([1, 0, 1], dtype=t.uint8)],
    "upsample": lambda t: t.nn.functional.upsample(t.ones(1, 1, 2, 2), scale_factor=2),
    "upsample_nearest": lambda t: t.nn.functional.upsample_nearest(t.ones(1, 1, 2), size=3),
    "upsample_bilinear": lambda t: t.nn.functional.upsample_bilinear(t.ones(1, 1, 2, 2),
                                                                    size=3),
    "assert_allclose": lambda t: t.testing.assert_allclose(t.ones(2), [1.0, 1.00001]),
    "stateless.functional_call": lambda t: t.nn.utils.stateless.functional_call(
        t.nn.Linear(2, 1), {"weight": t.ones(1, 2), "bias": t.zeros(1)}, (t.ones(1, 2),)),
}


def _record(fn):
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        fn()
    return ws


def _text(w):
    return str(w.message).split(" (Triggered internally")[0]


@pytest.mark.parametrize("name", list(_CASES))
def test_text_category_and_line_as_torch(name):
    torch.set_warn_always(True)
    try:
        expected = _record(lambda: _CASES[name](torch))
    finally:
        torch.set_warn_always(False)
    ndgrad.set_warn_always(True)
    try:
        got = _record(lambda: _CASES[name](ndgrad))
    finally:
        ndgrad.set_warn_always(False)
    assert [(w.category, _text(w)) for w in got] == [(w.category, _text(w)) for w in expected]
    assert got and all(w.filename == __file__ for w in got)


@pytest.mark.parametrize("name", ["cholesky", "qr", "scatter reduce", "index_reduce"])
def test_warn_once_per_process(name):
    for message in list(_warn._warned_once):
        _warn._warned_once.discard(message)
    assert len(_record(lambda: _CASES[name](ndgrad))) == 1
    assert _record(lambda: _CASES[name](ndgrad)) == []


def test_every_time_where_torch_warns_every_time():
    for _ in range(2):
        assert len(_record(lambda: _CASES["uint8 index"](ndgrad))) == 1
        assert len(_record(lambda: F.upsample(ndgrad.ones(1, 1, 2), size=3))) == 1


def test_scatter_value_with_reduce_does_not_warn():
    ndgrad.set_warn_always(True)
    try:
        assert _record(lambda: ndgrad.zeros(3).scatter_(0, ndgrad.tensor([0]), 1.0,
                                                         reduce="add")) == []
    finally:
        ndgrad.set_warn_always(False)


def test_assert_allclose_defaults_and_failure():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # float32 default rtol 1e-4 (assert_close's 1.3e-6 would refuse this)
        ndgrad.testing.assert_allclose(ndgrad.tensor([1.0]), [1.00005])
        ndgrad.testing.assert_allclose(ndgrad.tensor([float("nan")]), [float("nan")])
        ndgrad.testing.assert_allclose(ndgrad.tensor([1.0]), ndgrad.tensor([1.0],
                                                                             dtype=ndgrad.float64))
        with pytest.raises(AssertionError) as ours:
            ndgrad.testing.assert_allclose(ndgrad.tensor([1.0]), [1.01])
        with pytest.raises(AssertionError) as theirs:
            torch.testing.assert_allclose(torch.tensor([1.0]), [1.01])
    assert str(ours.value) == str(theirs.value)
