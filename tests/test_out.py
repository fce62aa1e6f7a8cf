"""``out=`` arguments against PyTorch (Note [out= arguments] in ndgrad/_out.py)."""

import warnings

import numpy as np
import pytest
import torch

import ndgrad


def _both(fn):
    """``fn(lib)`` run with torch and with ndgrad: (result or exception, warnings) each."""
    got = []
    for lib in (torch, ndgrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                r = fn(lib)
            except Exception as e:  # noqa: BLE001 - compared below
                r = e
        got.append((r, [str(x.message).split(" (Triggered")[0] for x in w
                         if x.category is UserWarning]))
    return got


def _same(fn):
    (t, tw), (n, nw) = _both(fn)
    if isinstance(t, Exception):
        assert type(n) is type(t), (t, n)
        assert str(n).split("\n")[0][:60] == str(t).split("\n")[0][:60]
    else:
        assert not isinstance(n, Exception), n
        tt = t if isinstance(t, (tuple, list)) else (t,)
        nn = n if isinstance(n, (tuple, list)) else (n,)
        for a, b in zip(tt, nn):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6)
            assert str(b.dtype).split(".")[1] == str(a.dtype).split(".")[1]
    assert nw == tw
    return n


def _x(lib, *shape, dtype=None, **kw):
    return lib.tensor(np.arange(np.prod(shape), dtype=np.float64).reshape(shape) / 3 - 1,
                      dtype=dtype or lib.float32, **kw)


def test_result_written_returned_and_version():
    for lib in (torch, ndgrad):
        o = lib.zeros(3)
        r = lib.sin(_x(lib, 3), out=o)
        assert r is o and o._version == 1
    _same(lambda lib: lib.sin(_x(lib, 3), out=lib.zeros(3)))
    _same(lambda lib: lib.add(_x(lib, 2, 3), 1.5, alpha=2, out=lib.zeros(2, 3)))
    _same(lambda lib: lib.sum(_x(lib, 2, 3), 1, out=lib.zeros(2)))
    _same(lambda lib: lib.cumsum(_x(lib, 4), 0, out=lib.zeros(4)))
    _same(lambda lib: lib.matmul(_x(lib, 2, 3), _x(lib, 3, 2), out=lib.zeros(2, 2)))
    _same(lambda lib: lib.linalg.inv(_x(lib, 2, 2) + lib.eye(2) * 3, out=lib.zeros(2, 2)))
    _same(lambda lib: lib.special.erf(_x(lib, 3), out=lib.zeros(3)))
    _same(lambda lib: lib.fft.fft(_x(lib, 4), out=lib.zeros(4, dtype=lib.complex64)))


def test_multi_output():
    def f(lib):
        v, i = lib.zeros(2), lib.zeros(2, dtype=lib.int64)
        r = lib.max(_x(lib, 2, 3), 1, out=(v, i))
        assert r[0] is v and r[1] is i and r.values is v
        return r
    _same(f)
    _same(lambda lib: lib.max(_x(lib, 2, 3), 1, out=(lib.zeros(2), lib.zeros(2))))
    _same(lambda lib: lib.sort(_x(lib, 4), out=(lib.zeros(4), lib.zeros(4, dtype=lib.int64))))


def test_resize():
    _same(lambda lib: lib.sin(_x(lib, 3), out=lib.zeros(0)))          # silently
    _same(lambda lib: lib.sin(_x(lib, 3), out=lib.zeros(2)))          # with the warning
    _same(lambda lib: lib.sum(_x(lib, 2, 3), 0, out=lib.zeros(5, 5)))
    _same(lambda lib: lib.range(0, 5, out=lib.zeros(2, 3)))             # keeps out's shape
    _same(lambda lib: lib.range(0, 5, out=lib.zeros(2, 2)))             # resized to (6,)


def test_dtype_rules():
    _same(lambda lib: lib.sin(_x(lib, 3), out=lib.zeros(3, dtype=lib.int64)))
    _same(lambda lib: lib.sin(_x(lib, 3), out=lib.zeros(3, dtype=lib.float64)))
    _same(lambda lib: lib.add(lib.ones(3, dtype=lib.int64), 1, out=lib.zeros(3)))
    _same(lambda lib: lib.eq(lib.ones(3), 1, out=lib.zeros(3)))
    _same(lambda lib: lib.add(lib.ones(3), 1, out=lib.zeros(3, dtype=lib.bool)))
    _same(lambda lib: lib.amax(_x(lib, 2, 3), 0, out=lib.zeros(3, dtype=lib.int32)))
    _same(lambda lib: lib.arange(5, out=lib.zeros(0)))                  # takes out's dtype


def test_autograd_refused():
    _same(lambda lib: lib.sin(_x(lib, 3, requires_grad=True), out=lib.zeros(3)))
    _same(lambda lib: lib.sin(_x(lib, 3), out=lib.zeros(3, requires_grad=True)))
    # a result that does not require grad is fine
    _same(lambda lib: lib.argmax(_x(lib, 3, requires_grad=True), out=lib.zeros(0, dtype=lib.int64)))

    def no_grad(lib):
        x = _x(lib, 3, requires_grad=True)
        with lib.no_grad():
            r = lib.sin(x, out=lib.zeros(3))
        assert not r.requires_grad and r.grad_fn is None
        return r
    _same(no_grad)


def test_refused_call_leaves_out_unchanged():
    o = ndgrad.full((3,), 7, dtype=ndgrad.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ndgrad.sin(ndgrad.ones(3), out=o)
    assert o.tolist() == [7, 7, 7] and o._version == 0


def test_overlap():
    def same_memory(lib):
        a = _x(lib, 4)
        lib.add(a, a.flip(0), out=a)
        return a
    _same(same_memory)

    def cumsum_into_input(lib):
        a = _x(lib, 4)
        lib.cumsum(a, 0, out=a)
        return a
    _same(cumsum_into_input)
    _same(lambda lib: (lambda a: lib.add(a[1:], a[:-1], out=a[:-1]))(_x(lib, 4)))
    _same(lambda lib: (lambda a: lib.gather(a, 0, lib.tensor([2, 1, 0]), out=a[:3]))(_x(lib, 6)))
    _same(lambda lib: lib.sin(_x(lib, 3), out=lib.zeros(1).expand(3)))

    def into_view(lib):
        b = lib.zeros(6)
        lib.sin(_x(lib, 3), out=b[::2])
        assert b._version == 1
        return b
    _same(into_view)


def test_wrong_out_types():
    _same(lambda lib: lib.sin(_x(lib, 3), out=[lib.zeros(3)]))
    _same(lambda lib: lib.sin(_x(lib, 3), out=3))
    # methods take no out=
    for lib in (torch, ndgrad):
        with pytest.raises(TypeError):
            _x(lib, 3).sin(out=lib.zeros(3))


def test_fixed_dtype_out_is_checked_before_the_input():
    """torch checks multinomial's out (always int64) before it reads the probabilities: an
    invalid distribution with a float out is the out error (as torch's op_db error input
    expects, whatever memory its empty input holds)."""
    import torch
    for lib in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="multinomial expects Long tensor out"):
            lib.multinomial(lib.zeros(1, 2, dtype=lib.float64), 2,
                            out=lib.zeros(1, 2, dtype=lib.float64))
