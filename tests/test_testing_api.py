"""``ndgrad.testing`` (assert_close, make_tensor), ``serialization.add_safe_globals``,
``accelerator``, ``xpu`` and ``utils.hooks`` against PyTorch's."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch

import ndgrad


def _cases(m):
    t = m.tensor
    return {
        "values": (t([1.0, 2.0, 3.0]), t([1.0, 2.1, 3.0])),
        "dtype": (t([1.0, 2.0]), t([1.0, 2.0], dtype=m.float64)),
        "shape": (t([1.0, 2.0]), t([1.0, 2.0, 3.0])),
        "py_float": (1.0, 1.1), "py_int": (1, 2), "py_types": (1, 1.0), "py_bool": (True, False),
        "py_complex": (1 + 1j, 1 + 1.5j), "np_scalar": (np.float32(1.0), np.float32(1.1)),
        "nan": (t([float("nan")]), t([float("nan")])),
        "seq": ([m.ones(2), m.zeros(2)], [m.ones(2), m.ones(2)]),
        "nested": ([1.0, [2.0, m.ones(1)]], [1.0, [2.0, m.zeros(1)]]),
        "mapping": ({"a": m.ones(2)}, {"a": m.ones(2) * 2}),
        "keys": ({"a": 1}, {"b": 1}),
        "np": (np.ones(2), np.ones(2) * 1.5),
        "transposed": (m.ones(2, 2), m.ones(2, 2).t()),
        "int": (t([1, 2]), t([1, 3])), "bool": (t([True, False]), t([True, True])),
        "uint8": (t([1, 100], dtype=m.uint8), t([1, 200], dtype=m.uint8)),
        "complex": (t([1 + 1j, 2j]), t([1 + 1j, 2.5j])),
        "zero_d": (t(1.0), t(1.5)), "zero_d_int": (t(1), t(2)), "zero_d_bool": (t(True), t(False)),
        "two_d": (m.ones(3, 3), t([[1.0, 1, 1], [2, 1, 1], [1, 1, 2]])),
        "half": (t([1.0, 2.0], dtype=m.float16), t([1.0, 2.1], dtype=m.float16)),
        "bf16": (t([1.0, 2.0], dtype=m.bfloat16), t([1.0, 2.1], dtype=m.bfloat16)),
        "inf": (t([1.0, float("inf")]), t([1.0, 5.0])), "same_inf": (t([float("inf")]),) * 2,
        "zero_expected": (t([0.0, 1.0]), t([0.0, 0.0])),
        "layout": (m.ones(2), m.ones(2).to_sparse()),
        "seq_len": ([1, 2], [1, 2, 3]), "list_tuple": ([1, 2], (1, 2)),
        "none": (None, None), "types": (m.ones(2), np.ones(2)), "strings": ("a", "a"),
        "close": (m.ones(2), m.ones(2) + 1e-6),
        "none_number": (None, 1), "number_none": (1.5, None), "none_tensor": (None, m.ones(1)),
        "none_nested": ([1, None], [1, 2]), "strings_nested": ([1, "a"], [1, "a"]),
        "strings_mapping": ({"k": [None, "a"]}, {"k": [None, "a"]}),
    }


KW = {"stride": {"check_stride": True}, "no_dtype": {"check_dtype": False},
      "tols": {"rtol": 0.1, "atol": 0.0}, "exact": {"rtol": 0, "atol": 0},
      "equal_nan": {"equal_nan": True}, "msg": {"msg": "custom"},
      "msg_fn": {"msg": lambda s: "X" + s[:12]}, "only_rtol": {"rtol": 1e-2}}


def _outcome(m, name, kw):
    a, e = _cases(m)[name]
    try:
        m.testing.assert_close(a, e, **kw)
        return None
    except Exception as err:     # the type and the whole text
        return type(err).__name__, str(err).replace("ndgrad", "torch")


@pytest.mark.parametrize("name", sorted(_cases(torch)))
@pytest.mark.parametrize("kw", ["none", "stride", "no_dtype", "exact", "equal_nan", "msg_fn"])
def test_assert_close_as_torch(name, kw):
    k = {} if kw == "none" else KW[kw]
    want, got = _outcome(torch, name, k), _outcome(ndgrad, name, k)
    if name == "complex" and want is not None and got is not None:
        # complex |e| in float32 may round one ulp apart: compare all but that number
        want = (want[0], want[1].rsplit("difference:", 1)[0])
        got = (got[0], got[1].rsplit("difference:", 1)[0])
    if name == "types" and want is not None:   # the class names differ
        assert got[0] == want[0] == "TypeError"
        return
    assert got == want


@pytest.mark.parametrize("kw", ["tols", "msg", "only_rtol"])
def test_assert_close_arguments_as_torch(kw):
    for name in ("values", "dtype", "int"):
        assert _outcome(ndgrad, name, KW[kw]) == _outcome(torch, name, KW[kw])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "complex64",
                                   "int64", "uint8", "bool", "int16"])
@pytest.mark.parametrize("kw", [{}, {"low": 0, "high": 5}, {"noncontiguous": True},
                                {"exclude_zero": True}, {"low": -1e39, "high": 1e39}])
def test_make_tensor_draws_torchs_values(dtype, kw):
    out = []
    for m in (torch, ndgrad):
        m.manual_seed(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r = m.testing.make_tensor(2, 3, dtype=getattr(m, dtype), device="cpu", **kw)
            except (ValueError, RuntimeError) as e:
                out.append((type(e).__name__, str(e).replace("ndgrad", "torch")))
                continue
        out.append((r.detach().to(m.float64 if dtype != "complex64" else m.complex128)
                    .numpy().tolist(), r.stride(), m.rand(1).item()))
    assert out[0] == out[1]


def test_make_tensor_refusals_as_torch():
    for kw in ({"low": 2, "high": 1}, {"low": float("nan")}, {"requires_grad": True,
               "dtype": "int64"}, {"noncontiguous": True, "memory_format": "contiguous"}):
        errs = []
        for m in (torch, ndgrad):
            k = dict(kw)
            k["dtype"] = getattr(m, k.get("dtype", "float32"))
            if "memory_format" in k:
                k["memory_format"] = m.contiguous_format
            with pytest.raises(ValueError) as e:
                m.testing.make_tensor(2, device="cpu", **k)
            errs.append(str(e.value).replace("ndgrad", "torch"))
        assert errs[0] == errs[1]
    r = ndgrad.testing.make_tensor(3, dtype=ndgrad.float64, device="cpu", requires_grad=True)
    assert r.requires_grad and r.is_leaf


class Point:        # a user class a checkpoint may hold
    def __init__(self, x):
        self.x = x


def test_add_safe_globals_allows_a_class_in_weights_only_files():
    buf = io.BytesIO()
    ndgrad.save({"p": Point(ndgrad.ones(2))}, buf)
    with pytest.raises(Exception, match="add_safe_globals"):
        ndgrad.load(io.BytesIO(buf.getvalue()))
    with ndgrad.serialization.safe_globals([Point]):
        assert ndgrad.serialization.get_safe_globals() == [Point]
        p = ndgrad.load(io.BytesIO(buf.getvalue()))["p"]
        assert isinstance(p, Point) and p.x.tolist() == [1.0, 1.0]
    assert ndgrad.serialization.get_safe_globals() == []
    ndgrad.serialization.add_safe_globals([(Point, f"{__name__}.Point")])
    try:
        assert isinstance(ndgrad.load(io.BytesIO(buf.getvalue()))["p"], Point)
        # the same file through torch with torch's allow list
        with torch.serialization.safe_globals([Point]):
            assert torch.load(io.BytesIO(buf.getvalue()))["p"].x.tolist() == [1.0, 1.0]
    finally:
        ndgrad.serialization.clear_safe_globals()
    # a malformed entry is listed, and refused when a load consults the list (as torch)
    ndgrad.serialization.add_safe_globals([(Point,)])
    try:
        with pytest.raises(ValueError, match="Expected tuple of length 2"):
            ndgrad.load(io.BytesIO(buf.getvalue()))
    finally:
        ndgrad.serialization.clear_safe_globals()


def test_no_accelerator_and_no_xpu_as_torch_cpu():
    for m in (torch, ndgrad):
        assert m.accelerator.is_available() is False
        assert m.accelerator.current_accelerator() is None
        assert m.accelerator.device_count() == 0 and m.xpu.device_count() == 0
        assert m.xpu.is_available() is False
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            m.accelerator.current_device_index()
    h = ndgrad.ones(1, requires_grad=True).register_hook(lambda g: g)
    assert isinstance(h, ndgrad.utils.hooks.RemovableHandle)
