"""``out=`` given something that is not a Tensor, against torch: functions with several
overloads list the arguments given ("got (Tensor, int, out=list)") and their overloads; the
binary arithmetic ops take a Python number as a 0-d ``out`` (torch's parser wraps it), so the
result's dtype is checked against it (ndgrad/_out.py)."""

import warnings

import pytest
import torch

import ndgrad

from _compare import outcome


def _x(m):
    return m.ones(2, 2)


CALLS = {
    "add": lambda m, o: m.add(_x(m), _x(m), out=o),
    "sub": lambda m, o: m.sub(_x(m), _x(m), out=o),
    "mul": lambda m, o: m.mul(_x(m), _x(m), out=o),
    "mul_scalar": lambda m, o: m.mul(_x(m), 2.0, out=o),
    "div": lambda m, o: m.div(_x(m), _x(m), out=o),
    "true_divide": lambda m, o: m.true_divide(_x(m), _x(m), out=o),
    "floor_divide": lambda m, o: m.floor_divide(_x(m), _x(m), out=o),
    "matmul": lambda m, o: m.matmul(_x(m), _x(m), out=o),
    "mm": lambda m, o: m.mm(_x(m), _x(m), out=o),
    "bmm": lambda m, o: m.bmm(_x(m)[None], _x(m)[None], out=o),
    "sum": lambda m, o: m.sum(_x(m), out=o),
    "sum_dim": lambda m, o: m.sum(_x(m), 0, out=o),
    "sum_dim_keepdim": lambda m, o: m.sum(_x(m), 0, True, out=o),
    "mean": lambda m, o: m.mean(_x(m), out=o),
    "mean_dim": lambda m, o: m.mean(_x(m), 0, out=o),
    "prod": lambda m, o: m.prod(_x(m), out=o),
    "prod_dim": lambda m, o: m.prod(_x(m), 0, out=o),
    "cat": lambda m, o: m.cat([_x(m), _x(m)], out=o),
    "cat_dim": lambda m, o: m.cat([_x(m), _x(m)], 1, out=o),
    "pow": lambda m, o: m.pow(_x(m), 2, out=o),
    "pow_scalar_base": lambda m, o: m.pow(2, _x(m), out=o),
    "remainder": lambda m, o: m.remainder(_x(m), _x(m), out=o),
    "fmod": lambda m, o: m.fmod(_x(m), 2, out=o),
    "eq": lambda m, o: m.eq(_x(m), _x(m), out=o),
    "lt_scalar": lambda m, o: m.lt(_x(m), 2, out=o),
    "bitwise_and": lambda m, o: m.bitwise_and(_x(m).long(), _x(m).long(), out=o),
    "clamp": lambda m, o: m.clamp(_x(m), 0.0, 1.0, out=o),
    "lerp": lambda m, o: m.lerp(_x(m), _x(m), 0.5, out=o),
    "all": lambda m, o: m.all(_x(m), out=o),
    "exp": lambda m, o: m.exp(_x(m), out=o),
    "where": lambda m, o: m.where(_x(m) > 0, _x(m), _x(m), out=o),
}
OUTS = {"int": lambda m: 3, "float": lambda m: 2.5, "bool": lambda m: True,
        "list": lambda m: [_x(m)], "str": lambda m: "s"}


@pytest.mark.parametrize("out", sorted(OUTS))
@pytest.mark.parametrize("call", sorted(CALLS))
def test_invalid_out_as_torch(call, out):
    def run(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # the 0-d float out is resized, as in torch
            r = outcome(lambda: CALLS[call](m, OUTS[out](m)))
        return r if r[0] != "ok" else ("ok", None)
    assert run(ndgrad) == run(torch)
