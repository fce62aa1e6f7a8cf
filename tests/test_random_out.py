"""randint/randperm with out= (torch's overloads), and the factories' out= checks shared with
them: dtype against out's, requires_grad, torch's refusals of randperm's dtypes."""

import warnings

import pytest
import torch

import ndgrad


def _cases(lib):
    L = lib.long
    return {
        "randint": lambda: lib.randint(10, (3,), out=lib.empty(3, dtype=L)),
        "randint low": lambda: lib.randint(2, 10, (3,), out=lib.empty(3, dtype=L)),
        "randint resize": lambda: lib.randint(10, (3,), out=lib.empty(5, dtype=L)),
        "randint empty": lambda: lib.randint(10, (3,), out=lib.empty(0, dtype=L)),
        "randint float out": lambda: lib.randint(10, (2, 2), out=lib.empty(4)),
        "randint dtype mismatch": lambda: lib.randint(10, (3,), out=lib.empty(3, dtype=L),
                                                      dtype=lib.int32),
        "randint dtype same": lambda: lib.randint(10, (3,), out=lib.empty(3, dtype=L),
                                                  dtype=lib.int64),
        "randint requires_grad": lambda: lib.randint(10, (3,), out=lib.empty(3),
                                                     requires_grad=True),
        "randint requires_grad long": lambda: lib.randint(10, (3,), out=lib.empty(3, dtype=L),
                                                          requires_grad=True),
        "randint uint8 bounds": lambda: lib.randint(300, (3,), out=lib.empty(3, dtype=lib.uint8)),
        "randint strided out": lambda: lib.randint(10, (3,), out=lib.empty(6, dtype=L)[::2]),
        "randint out requires grad": lambda: lib.randint(3, (4,),
                                                         out=lib.empty(4, requires_grad=True)),
        "randperm": lambda: lib.randperm(5, out=lib.empty(5, dtype=L)),
        "randperm resize": lambda: lib.randperm(5, out=lib.empty(3, dtype=L)),
        "randperm 2d out": lambda: lib.randperm(5, out=lib.empty(2, 3, dtype=L)),
        "randperm float out": lambda: lib.randperm(5, out=lib.empty(5)),
        "randperm int16 out": lambda: lib.randperm(5, out=lib.empty(5, dtype=lib.int16)),
        "randperm uint8 overflow": lambda: lib.randperm(300, out=lib.empty(300,
                                                                          dtype=lib.uint8)),
        "randperm dtype mismatch": lambda: lib.randperm(5, out=lib.empty(5, dtype=L),
                                                        dtype=lib.int32),
        "randperm out requires grad": lambda: lib.randperm(4,
                                                           out=lib.empty(4, requires_grad=True)),
        "randperm bool": lambda: lib.randperm(3, dtype=lib.bool),
        "randperm complex": lambda: lib.randperm(3, dtype=lib.complex64),
        "randperm int8 128": lambda: lib.randperm(128, dtype=lib.int8),
        "randperm int8 129": lambda: lib.randperm(129, dtype=lib.int8),
        "randperm half 2049": lambda: lib.randperm(2049, dtype=lib.float16),
        "randperm half 2050": lambda: lib.randperm(2050, dtype=lib.float16),
        "randperm bfloat16 3000": lambda: lib.randperm(3000, dtype=lib.bfloat16),
        "rand dtype mismatch": lambda: lib.rand(3, dtype=lib.float64, out=lib.empty(3)),
        "zeros out requires grad": lambda: lib.zeros(3, out=lib.empty(3, requires_grad=True)),
        "randn out requires grad": lambda: lib.randn(3, out=lib.empty(3, requires_grad=True)),
        "rand requires_grad": lambda: lib.rand(3, out=lib.empty(3), requires_grad=True),
    }


def _outcome(f):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = f()
        except Exception as e:      # noqa: BLE001 - the error is the outcome compared
            return type(e).__name__, str(e).split("\n")[0]
    return (str(r.dtype).split(".")[1], list(r.shape), r.stride(), r.requires_grad, r.is_leaf,
            len(w))


@pytest.mark.parametrize("name", list(_cases(torch)))
def test_outcome_matches_torch(name):
    assert _outcome(_cases(ndgrad)[name]) == _outcome(_cases(torch)[name])


@pytest.mark.parametrize("fn", ["randint", "randperm"])
def test_out_gets_torchs_numbers_and_is_returned(fn):
    vals = []
    for lib in (ndgrad, torch):
        lib.manual_seed(0)
        o = lib.empty(6, dtype=lib.long)
        r = lib.randint(100, (6,), out=o) if fn == "randint" else lib.randperm(6, out=o)
        assert r is o
        lib.manual_seed(0)
        plain = lib.randint(100, (6,)) if fn == "randint" else lib.randperm(6)
        g = lib.Generator().manual_seed(3)
        of = lib.empty(6)
        lib.randint(100, (6,), out=of, generator=g) if fn == "randint" else \
            lib.randperm(6, out=of, generator=g)
        vals.append((o.tolist(), plain.tolist(), of.tolist()))
    assert vals[0] == vals[1]
    assert vals[0][0] == vals[0][1]
