"""ndgrad.mps and ndgrad.backends.mps against torch's CPU build (no Metal): the same names,
False/0 answers, and torch's RuntimeErrors for everything that needs the device."""

import re

import pytest
import torch

import ndgrad


def _same_error(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value))):
        call(ndgrad)


def test_names_match_torch():
    assert set(ndgrad.mps.__all__) == set(torch.mps.__all__)
    assert set(ndgrad.mps.profiler.__all__) == set(torch.mps.profiler.__all__)
    assert set(ndgrad.backends.mps.__all__) == set(torch.backends.mps.__all__)


def test_answers_without_mps():
    for T in (torch, ndgrad):
        assert T.mps.is_available() is False and T.mps.device_count() == 0
        assert T.backends.mps.is_available() is False and T.backends.mps.is_built() is False
        assert T.mps.manual_seed(3) is None
    device = "mps" if ndgrad.backends.mps.is_available() else "cpu"
    assert ndgrad.ones(1, device=device).device.type == "cpu"


@pytest.mark.parametrize("call", [
    lambda T: T.mps.seed(), lambda T: T.mps.get_rng_state(),
    lambda T: T.mps.set_rng_state(T.zeros(16, dtype=T.uint8)), lambda T: T.mps.synchronize(),
    lambda T: T.mps.empty_cache(), lambda T: T.mps.set_per_process_memory_fraction(0.5),
    lambda T: T.mps.current_allocated_memory(), lambda T: T.mps.driver_allocated_memory(),
    lambda T: T.mps.recommended_max_memory(), lambda T: T.mps.compile_shader("kernel void f(){}"),
    lambda T: T.mps.load_metallib(b"\x00"), lambda T: T.mps.load_metallib("x.metallib"),
    lambda T: T.mps.load_metallib(3), lambda T: T.mps.profiler.start(),
    lambda T: T.mps.profiler.stop(), lambda T: T.mps.profiler.profile().__enter__(),
    lambda T: T.backends.mps.is_macos13_or_newer(),
    lambda T: T.backends.mps.is_macos_or_newer(14, 0),
])
def test_refusals_match_torch(call):
    _same_error(call)


def test_event_refused():
    # (torch's Event fails the same way, then warns from __del__ about its half-made object)
    for kwargs in ({}, {"enable_timing": True}):
        with pytest.raises(RuntimeError, match=r"^Cannot execute acquireEvent\(\) without MPS "
                                               r"backend\.$"):
            ndgrad.mps.Event(**kwargs)


def test_refusals_where_torch_leaks_internals():
    # torch's CPU build fails here with AttributeErrors on torch._C; ndgrad raises the
    # backend's RuntimeError instead
    for call in (ndgrad.backends.mps.get_core_count, ndgrad.backends.mps.get_name,
                 ndgrad.mps.profiler.is_metal_capture_enabled,
                 ndgrad.mps.profiler.is_capturing_metal,
                 lambda: ndgrad.mps.profiler.metal_capture("f").__enter__()):
        with pytest.raises(RuntimeError, match=r"Cannot execute \w+\(\) without MPS backend\."):
            call()
