"""``out=`` of the functions with several results (max/min(dim), sort, topk ...): torch's
errors for an ``out`` of the wrong kind or length, its result type names (``max_out``); and
NumPy 2's ``copy=`` on a tensor, as with torch's ``__array__``."""

import warnings

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome

X = [[1.0, 5.0], [3.0, 2.0]]


def _summary(r):
    if isinstance(r, tuple):
        return type(r).__name__, [v.tolist() for v in r]
    return type(r).__name__, r.tolist()


CALLS = {
    "max_dim": lambda m, x, o: m.max(x, 1, out=o),
    "max_dim_kw": lambda m, x, o: m.max(x, dim=1, out=o),
    "max_keepdim": lambda m, x, o: m.max(x, 1, True, out=o),
    "min_dim": lambda m, x, o: m.min(x, 1, out=o),
    "max_method": lambda m, x, o: x.max(1, out=o),
    "sort": lambda m, x, o: m.sort(x, 1, out=o),
    "topk": lambda m, x, o: m.topk(x, 1, out=o),
    "median": lambda m, x, o: m.median(x, 1, out=o),
    "mode": lambda m, x, o: m.mode(x, 1, out=o),
    "kthvalue": lambda m, x, o: m.kthvalue(x, 1, 1, out=o),
    "cummax": lambda m, x, o: m.cummax(x, 1, out=o),
    "aminmax": lambda m, x, o: m.aminmax(x, dim=1, out=o),
    "frexp": lambda m, x, o: m.frexp(x, out=o),
    "slogdet": lambda m, x, o: m.linalg.slogdet(x, out=o),
}

OUTS = {
    "tensor": lambda m: m.empty(2),
    "one": lambda m: (m.empty(2),),
    "three": lambda m: (m.empty(0), m.empty(0), m.empty(0)),
    "ints": lambda m: (1, 2),
    "ndarray_second": lambda m: [m.empty(0), np.empty(2)],
    "str": lambda m: "ab",
    "int": lambda m: 5,
    "none": lambda m: None,
}


def _good_out(m, name):
    if name in ("aminmax", "slogdet"):
        return (m.empty(0), m.empty(0))
    if name == "frexp":
        return (m.empty(0), m.empty(0, dtype=m.int32))
    return [m.empty(0), m.empty(0, dtype=m.long)]


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("kind", list(OUTS) + ["good"])
def test_out_kinds_as_torch(name, kind):
    def run(m):
        x = m.tensor(X)
        o = _good_out(m, name) if kind == "good" else OUTS[kind](m)
        return _summary(CALLS[name](m, x, o))
    t, n = outcome(lambda: run(torch)), outcome(lambda: run(ndgrad))
    if t[0] != "ok":               # the overload list after the first line is not compared
        t, n = (t[0], _first_line(t[1])), (n[0], _first_line(n[1]))
    assert t == n


def _first_line(msg):
    line = msg.split("\n")[0]
    # ndgrad cannot tell max(x, 1) from max(x, dim=1) there: the arguments it lists after
    # "got" may be in another order than torch's
    return line.split(" - got")[0] if "invalid combination" in line else line


@pytest.mark.parametrize("call", [
    lambda m, x, o: m.max(x, out=o),
    lambda m, x, o: m.min(x, out=o),
    lambda m, x, o: m.max(x, x, out=o),
])
@pytest.mark.parametrize("out", [
    lambda m: (m.empty(()), m.empty((), dtype=m.long)),
    lambda m: [m.empty(())],
    lambda m: "ab",
    lambda m: m.empty((), dtype=m.long),
    lambda m: m.empty((), dtype=m.float64),
    lambda m: m.empty((), dtype=m.bool),
])
def test_single_result_forms(call, out):
    def run(m):
        x = m.tensor(X)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")    # (the binary form resizes its 0-d out)
            return _summary(call(m, x, out(m)))
    t, n = outcome(lambda: run(torch)), outcome(lambda: run(ndgrad))
    if t[0] != "ok":
        t, n = (t[0], t[1].split("\n")[0]), (n[0], n[1].split("\n")[0])
    assert t == n


def test_out_is_returned_and_written():
    v, i = ndgrad.empty(2), ndgrad.empty(2, dtype=ndgrad.long)
    r = ndgrad.max(ndgrad.tensor(X), 1, out=(v, i))
    assert type(r) is ndgrad.return_types.max_out and r.values is v and r.indices is i
    assert v.tolist() == [5.0, 3.0] and i.tolist() == [1, 0]
    assert repr(r).startswith("ndgrad.return_types.max_out(")


@pytest.mark.parametrize("call", [
    lambda m, t: np.array(t, copy=False),
    lambda m, t: np.asarray(t, copy=False),
    lambda m, t: np.array(t, dtype=np.float64, copy=False),
    lambda m, t: np.shares_memory(np.asarray(t), t.numpy()),
    lambda m, t: np.shares_memory(np.array(t), t.numpy()),
    lambda m, t: np.shares_memory(np.array(t, copy=None), t.numpy()),
    lambda m, t: np.array(t, dtype=np.float64, copy=None).dtype,
    lambda m, t: t.__array__(copy=False),
    lambda m, t: np.array(t.requires_grad_()),
])
def test_numpy_copy_keyword_as_torch(call):
    def run(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)   # NumPy's, for both
            r = call(m, m.tensor([1.0, 2.0]))
        return r.tolist() if isinstance(r, np.ndarray) else r
    t, n = outcome(lambda: run(torch)), outcome(lambda: run(ndgrad))
    assert t == n
