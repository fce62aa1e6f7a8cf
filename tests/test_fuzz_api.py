"""Differential fuzzing of the public API against PyTorch (see tests/_fuzz.py): random calls of
about 60 public functions and Tensor methods with random arguments of every kind. Per call: if
torch raises, ndgrad raises an exception of the same built-in class and leaves every input as it
was; if torch returns, ndgrad returns an equal result.

``KNOWN`` lists the outcomes where ndgrad differs on purpose, each with its reason; nothing else
is excused."""

import random
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import _fuzz

# (predicate on (call, kind, detail), reason)
KNOWN = [
    (lambda c, k, d: k == "value" and "complex32" in d,
     "ndgrad has no complex32 (chalf): float16 with a complex number gives complex64"),
    (lambda c, k, d: k == "value" and "nanj" in d and "inf" in d,
     "torch gives inf+nanj for complex + inf (its scalar is multiplied by alpha=1 as a complex "
     "number); ndgrad gives the IEEE sum inf+0j"),
    (lambda c, k, d: k == "rejects" and c.spec.name == "cat",
     "torch skips 1-d empty tensors (a legacy rule) before checking cat's dim"),
]


def _known(call, kind, detail):
    return any(pred(call, kind, detail) for pred, _ in KNOWN)


@settings(max_examples=1500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_random_call_matches_torch(seed):
    call = _fuzz.draw_call(random.Random(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kind, detail = _fuzz.check_call(call)
    assert not kind or _known(call, kind, detail), f"{kind}: {call!r}\n{detail}"


def test_every_spec_is_drawn_and_runs():
    # Each public entry point in the fuzzer's table gets calls of its own, with good input.
    rng = random.Random(0)
    for spec in _fuzz.SPECS:
        for _ in range(5):
            call = _fuzz.draw_call(rng, spec)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kind, detail = _fuzz.check_call(call)
            assert not kind or _known(call, kind, detail), f"{kind}: {call!r}\n{detail}"
    assert len({s.name for s in _fuzz.SPECS}) >= 40
