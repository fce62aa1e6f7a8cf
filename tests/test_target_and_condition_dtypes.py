"""binary_cross_entropy_with_logits' target dtypes and where's condition dtypes, as torch."""

import warnings

import pytest
import torch

import ndgrad
from ndgrad import _warn

DTYPES = ["int64", "int32", "uint8", "bool", "float64", "float16", "float32", "bfloat16"]


@pytest.mark.parametrize("input_dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("target_dtype", DTYPES)
@pytest.mark.parametrize("extra", [None, "weight", "pos_weight"])
def test_bce_with_logits_target_dtype_as_torch(input_dtype, target_dtype, extra):
    def run(lib):
        kw = {} if extra is None else {extra: lib.ones(3)}
        x = lib.tensor([0.5, -1.0, 2.0]).to(getattr(lib, input_dtype))
        t = lib.tensor([1, 0, 1]).to(getattr(lib, target_dtype))
        try:
            r = lib.nn.functional.binary_cross_entropy_with_logits(x, t, **kw)
        except RuntimeError as e:
            return str(e)
        return str(r.dtype).split(".")[1], round(float(r), 2)
    assert run(ndgrad) == run(torch)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "uint8", "bool"])
def test_where_condition_dtype_as_torch(dtype):
    def run(lib):
        torch.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                try:
                    r = lib.where(lib.tensor([2, 0]).to(getattr(lib, dtype)), lib.ones(2),
                                  lib.zeros(2)).tolist()
                except RuntimeError as e:
                    r = str(e)
        finally:
            torch.set_warn_always(False)
        return r, [str(w.message).split(" (Triggered")[0] for w in ws]
    _warn._warned_once.clear()
    assert run(ndgrad) == run(torch)


@pytest.mark.parametrize("input_dtype", ["int64", "int32", "bool"])
@pytest.mark.parametrize("target_dtype", ["float32", "int64"])
def test_bce_with_logits_integer_input_as_torch(input_dtype, target_dtype):
    def run(lib):
        try:
            lib.nn.functional.binary_cross_entropy_with_logits(
                lib.tensor([1, 0]).to(getattr(lib, input_dtype)),
                lib.tensor([1, 0]).to(getattr(lib, target_dtype)))
        except (RuntimeError, NotImplementedError) as e:
            return type(e), str(e)
    assert run(ndgrad) == run(torch)
