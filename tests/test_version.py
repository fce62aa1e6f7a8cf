"""``ndgrad.__version__`` and ``ndgrad.version`` behave as ``torch.__version__``/``torch.version``:
a str comparing as a PEP 440 version with strings, tuples and packaging's ``Version``."""

import itertools
import operator
import pickle

import torch
from torch.torch_version import TorchVersion as TorchTV

import ndgrad
from ndgrad.torch_version import TorchVersion

VERSIONS = ["2.13.0+cpu", "2.13.0", "2.13", "2.0", "2.1.0a0+git1234", "1.10.0a", "1.10.0",
            "1.10.0.dev20210101", "1.10.0rc1", "1.10.0.post1", "1.10.0-1", "1!0.1", "parrot",
            "1.10.0+cu113", "1.10.0+cu.113", "1.10.0+113", "V1.10", "1.10.0b2.post3.dev4",
            "1.10.0alpha", "1.10.0c1", "1.10.0preview2", "1.10.0-r3", "1.10.0_dev"]
OTHERS = VERSIONS + [(2, 1), (2, 13), (2, 13, 0), (1,), [1, 10], (2, "x"), ("a",), None, 2, 2.5,
                     b"2", {}]
OPS = [operator.lt, operator.le, operator.eq, operator.ne, operator.ge, operator.gt]


def _outcome(op, a, b):
    try:
        return op(a, b)
    except Exception as e:  # noqa: BLE001 - the error type is what is compared
        return type(e)


def test_comparisons_match_torch():
    for a, b, op in itertools.product(VERSIONS, OTHERS, OPS):
        want = _outcome(op, TorchTV(a), b)
        got = _outcome(op, TorchVersion(a), b)
        assert got == want, (a, b, op)


def test_is_a_str_with_strings_hash():
    v = ndgrad.__version__
    assert isinstance(v, str) and type(v).__name__ == "TorchVersion"
    assert hash(v) == hash(str(v)) and {v: 1}[str(v)] == 1
    assert v.split(".")[0] == str(v).split(".")[0] and type(str(v)) is str
    assert repr(v) == repr(str(v))
    assert pickle.loads(pickle.dumps(v)) == v
    assert v >= "0.1" and v < (99,) and v == tuple(int(p) for p in str(v).split("."))


def test_packaging_reads_and_compares():
    from packaging import version  # pytest depends on packaging
    v = ndgrad.__version__
    assert version.parse(v) == version.Version(str(v))
    assert TorchVersion("2.13.0+cpu") > version.Version("2.0")
    assert TorchVersion("2.13.0+cpu") == version.Version("2.13.0+cpu")
    assert version.Version("2.0") < TorchVersion("2.13.0")
    # the local and pre/post/dev ordering agree with packaging's
    for a, b in itertools.product(VERSIONS, VERSIONS):
        try:
            pa, pb = version.Version(a), version.Version(b)
        except version.InvalidVersion:
            continue
        assert (TorchVersion(a) < b) == (pa < pb), (a, b)
        assert (TorchVersion(a) == b) == (pa == pb), (a, b)


def test_version_module_matches_torch_names():
    assert set(ndgrad.version.__all__) == set(torch.version.__all__)
    assert ndgrad.version.__version__ is ndgrad.__version__
    for name in ("cuda", "hip", "rocm", "xpu"):
        assert getattr(ndgrad.version, name) is None
    assert ndgrad.version.debug is False and isinstance(ndgrad.version.git_version, str)
    import ndgrad.version as mod
    assert mod is ndgrad.version
