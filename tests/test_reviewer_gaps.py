"""Small gaps a reviewer found, each against torch: addcmul/addcdiv's value in float16,
dist on integer and unsigned dtypes, add_safe_globals' tuples, .to('mps:0'), ndgrad.xpu's
queries, repeat's gradient (no view), fftfreq into an out of several dims."""

import collections
import io
import warnings

import numpy as np
import pytest
import torch

import ndgrad

LIBS = [ndgrad, torch]


def _outcome(f):
    try:
        r = f()
    except Exception as e:      # noqa: BLE001 - the error is the outcome compared
        msg = str(e).split("\n")[0]
        for name in ("PyTorch", "Torch", "ndgrad"):
            msg = msg.replace(name, "torch")
        return type(e).__name__, msg[:140]
    return ("tensor", str(r.dtype).split(".")[1], r.tolist()) if hasattr(r, "tolist") else r


def _same(fn):
    assert _outcome(lambda: fn(ndgrad)) == _outcome(lambda: fn(torch))


@pytest.mark.parametrize("value", [65519, 65520, 1e6, 3e38, 1e39, 0.1])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["addcmul", "addcdiv", "addcmul_"])
def test_addc_value_checked_in_float32_for_half_types(op, dtype, value):
    def fn(lib):
        h = lib.full((3,), 1.5, dtype=getattr(lib, dtype))
        if op == "addcmul_":
            return h.clone().addcmul_(h, h, value=value)
        return getattr(lib, op)(h, h, h, value=value)
    _same(fn)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "uint16", "uint32", "uint64",
                                   "float32"])
def test_dist_refusals(dtype):
    _same(lambda lib: lib.dist(lib.ones(3, dtype=getattr(lib, dtype)),
                               lib.zeros(3, dtype=getattr(lib, dtype))))


P = collections.namedtuple("P", "x")


@pytest.mark.parametrize("entries", [[(P,)], [(P, 3)], [(P, "a", "b")], [P, (P,)],
                                     [(P, __name__ + ".P")], [P]])
def test_add_safe_globals_keeps_any_tuple_and_refuses_it_at_load(entries):
    res = []
    for lib in LIBS:
        ser = lib.serialization
        ser.clear_safe_globals()
        with_p, plain = io.BytesIO(), io.BytesIO()
        lib.save({"a": P(1)}, with_p)
        lib.save({"a": lib.ones(2)}, plain)
        try:
            ser.add_safe_globals(entries)
            got = [len(ser.get_safe_globals())]
            for b in (with_p, plain):
                b.seek(0)
                got.append(_outcome(lambda b=b, lib=lib: type(lib.load(b, weights_only=True)
                                                               ).__name__))
            with ser.safe_globals([(P,)]):
                got.append(len(ser.get_safe_globals()))
            got.append(len(ser.get_safe_globals()))
        finally:
            ser.clear_safe_globals()
        res.append(got)
    assert res[0] == res[1]


@pytest.mark.parametrize("dev", ["mps", "mps:0", "mps:1", "xla", "xla:0", "ipu:0"])
def test_to_an_absent_backend(dev):
    _same(lambda lib: lib.ones(2).to(dev))
    _same(lambda lib: lib.ones(2).to(lib.device(dev)))


@pytest.mark.parametrize("name", ["get_device_name", "init", "get_device_properties",
                                  "get_device_capability", "get_arch_list", "is_bf16_supported",
                                  "get_rng_state", "seed", "seed_all", "mem_get_info",
                                  "get_gencode_flags", "memory_allocated",
                                  "max_memory_allocated", "memory_reserved", "current_device"])
def test_xpu_queries_of_a_build_without_xpu(name):
    _same(lambda lib: getattr(lib.xpu, name)())
    _same(lambda lib: lib.xpu.set_device(0))


@pytest.mark.parametrize("reps", [(2,), (1,), (2, 3), (3, 1, 1), (2, 2, 2)])
def test_repeat_gradient_is_no_view(reps):
    res = []
    for lib in LIBS:
        x = lib.tensor(np.arange(4.0), requires_grad=True)
        g, = lib.autograd.grad(x.repeat(*reps).pow(2).sum(), x)
        res.append((g._is_view(), g._base is None, g.tolist()))
    assert res[0] == res[1]


@pytest.mark.parametrize("n,shape,d", [(4, (2, 2), 1.0), (4, (4, 1), 1.0), (6, (3, 2), 0.5),
                                       (6, (2, 3), 1.0), (5, (5, 1), 2.0), (8, (2, 2, 2), 1.0),
                                       (4, (4,), 1.0), (4, (5,), 1.0), (4, (2, 3), 1.0)])
def test_fftfreq_into_an_out_of_several_dims(n, shape, d):
    res = []
    for lib in LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            o = lib.empty(shape)
            r = lib.fft.fftfreq(n, d, out=o)
        res.append((r is o, list(o.shape), o.tolist()))
    assert res[0] == res[1]
    res = []
    for lib in LIBS:
        o = lib.empty(2, 2).t()
        lib.fft.fftfreq(4, out=o)
        res.append(o.tolist())
    assert res[0] == res[1]


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16", "complex64", "int64"])
def test_fftfreq_out_dtypes(dtype):
    def fn(lib):
        o = lib.empty(3, 2, dtype=getattr(lib, dtype))
        lib.fft.fftfreq(6, 0.3, out=o)
        return o
    _same(fn)
    _same(lambda lib: lib.fft.rfftfreq(6, dtype=getattr(lib, dtype)))
