"""ndgrad._dynamo (torch._dynamo's names around compile): config, reset, optimize, marks."""

import warnings

import pytest
import torch
import torch._dynamo

import ndgrad
import ndgrad._dynamo
from ndgrad.jit import api as jit_api


@pytest.fixture
def restore_config():
    yield
    ndgrad._dynamo.config.recompile_limit = 8
    ndgrad._dynamo.config.suppress_errors = False


NAMES = ["cache_size_limit", "recompile_limit", "suppress_errors", "verbose",
         "capture_scalar_outputs", "capture_dynamic_output_shape_ops", "optimize_ddp",
         "automatic_dynamic_shapes", "assume_static_by_default", "accumulated_cache_size_limit"]


def test_config_defaults_aliases_and_unknown_names_as_torch(restore_config):
    for n in NAMES:
        assert getattr(ndgrad._dynamo.config, n) == getattr(torch._dynamo.config, n), n
    for lib in (ndgrad, torch):
        with pytest.raises(AttributeError, match="torch._dynamo.config.no_such_flag does not"):
            lib._dynamo.config.no_such_flag = 1
        with pytest.raises(AttributeError, match="does not exist"):
            lib._dynamo.config.no_such_flag
    ndgrad._dynamo.config.cache_size_limit = 3
    assert ndgrad._dynamo.config.recompile_limit == 3


def test_reset_makes_compiled_functions_trace_again():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2
    g = ndgrad.compile(f)
    x = ndgrad.ones(2)
    g(x)
    g(x)
    assert len(calls) == 1
    ndgrad._dynamo.reset()
    assert g(x).tolist() == [2.0, 2.0] and len(calls) == 2
    ndgrad.compiler.reset()
    g(x)
    assert len(calls) == 3


def test_recompile_limit_is_compile_default(restore_config):
    ndgrad._dynamo.config.cache_size_limit = 1
    h = ndgrad.compile(lambda x: x + 1)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        h(ndgrad.ones(2))
        assert h(ndgrad.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert any("cache limit (1 specializations)" in str(w.message) for w in ws)
    assert ndgrad.compile(lambda x: x, cache_limit=5)._cache_limit == 5


def test_suppress_errors_runs_eagerly_when_building_fails(restore_config, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("backend failed")
    monkeypatch.setattr(jit_api, "_Specialization", broken)
    f = ndgrad.compile(lambda x: x * 3)
    with pytest.raises(RuntimeError, match="backend failed"):
        f(ndgrad.ones(2))
    ndgrad._dynamo.config.suppress_errors = True
    g = ndgrad.compile(lambda x: x * 3)
    with pytest.warns(UserWarning, match="suppress_errors"):
        assert g(ndgrad.ones(2)).tolist() == [3.0, 3.0]


def test_optimize_and_marks():
    f = ndgrad._dynamo.optimize("inductor")(lambda x: x.sin())
    assert f(ndgrad.zeros(2)).tolist() == [0.0, 0.0]
    t, tt = ndgrad.ones(2, 3), torch.ones(2, 3)
    for idx in (0, -1, [0, 1], (1,), 5):
        ndgrad._dynamo.mark_dynamic(t, idx)
        torch._dynamo.mark_dynamic(tt, idx)
    for lib, x in ((ndgrad, t), (torch, tt)):
        with pytest.raises(AssertionError, match="Expected index to be int, list, or tuple"):
            lib._dynamo.mark_dynamic(x, 1.5)
    ndgrad._dynamo.maybe_mark_dynamic(t, 0)
    ndgrad._dynamo.mark_static(t)
    assert ndgrad._dynamo.is_compiling() is False
