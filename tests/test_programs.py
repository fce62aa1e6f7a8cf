"""PyTorch programs of the kinds people share (tests/programs/*.py), run unchanged on torch and
on ndgrad: each file is executed twice in this process, once as written and once with every
``import torch...`` resolved to ``ndgrad...`` (an ``__import__`` given to that run only), and the
printed text must agree: the same words, the same integers and booleans, floats within the
program's tolerance (float32 training drifts by an ulp or so per step; float64 programs match
closely). Both runs draw from their library's generator after ``manual_seed``: ndgrad draws
torch's numbers (Note [Random streams] in ndgrad/_generator.py), so initial weights, dropout
masks, shuffles and samples are the same and no state is copied across.

Run ``python tests/test_programs.py [PYTHONPATH-of-ndgrad]`` to print which programs run.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import math
import pathlib
import re
import sys
import types
import warnings

import pytest

HERE = pathlib.Path(__file__).parent / "programs"
PROGRAMS = sorted(p.stem for p in HERE.glob("*.py") if p.stem != "conftest")

# relative tolerance per program (default 1e-4); the training loops in float32 drift most
# (kmeans_knn: torch's cdist sums |a|^2 + |b|^2 - 2ab in one BLAS call, ndgrad in NumPy: small
# distances agree to ~1e-5 absolute; contrastive_distill: Adam turns rounding-level gradient
# differences into ~2e-4 relative loss differences after a few steps; amp_bf16: bfloat16 keeps
# 8 bits, and torch's fused bfloat16 backward kernels (gelu, layer_norm) round their float32
# intermediates differently, ~1 bfloat16 ulp (4e-3) in a gradient; bf16_finetune: likewise
# torch's bfloat16 layer_norm and flash-attention backward kernels; vi_beta_dirichlet: torch's
# Beta/Dirichlet rsample gradients are series approximations good to ~1e-4, ndgrad's exact, and
# Adam carries the difference; float64 prints agree; metric_learning: a float32 triplet loss
# printed with 5 decimals sits on a rounding boundary, 0.086175092 against 0.086174995)
RTOL = {"gan": 2e-3, "transformer_classifier": 1e-3, "char_rnn": 1e-3, "vae": 1e-3,
        "kmeans_knn": 1e-3, "legacy_seq2seq": 1e-3, "text_tagger": 1e-3,
        "contrastive_distill": 1e-3, "amp_bf16": 1e-2, "bf16_finetune": 1e-2,
        "vi_beta_dirichlet": 2e-3, "metric_learning": 2e-4}
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")


def _importer(target: str):
    real = builtins.__import__

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == "torch" or name.startswith("torch.")):
            name = target + name[len("torch"):]
        return real(name, globals, locals, fromlist, level)
    return __import__


def run(name: str, target: str) -> str:
    """The program's printed output when ``import torch`` means ``import target``."""
    path = HERE / f"{name}.py"
    bi = dict(vars(builtins))
    bi["__import__"] = _importer(target)
    # the program is sys.modules["__main__"] while it runs, as under ``python prog.py``:
    # pickle finds the classes it defines (torch.save of a whole module, jit.save)
    main = types.ModuleType("__main__")
    env = main.__dict__
    env.update({"__file__": str(path), "__builtins__": bi})
    saved_main = sys.modules["__main__"]
    lib = __import__(target)
    dtype = lib.get_default_dtype()
    threads = lib.get_num_threads() if target == "torch" else None
    if threads is not None:
        lib.set_num_threads(1)  # small programs: torch's thread pool only adds contention
    out = io.StringIO()
    try:
        sys.modules["__main__"] = main
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(path.read_text(), str(path), "exec"), env)
    finally:
        sys.modules["__main__"] = saved_main
        lib.set_default_dtype(dtype)
        if threads is not None:
            lib.set_num_threads(threads)
    return out.getvalue()


def compare(expected: str, actual: str, rtol: float, atol: float = 1e-6) -> None:
    actual = actual.replace("ndgrad.", "torch.")      # reprs name their module (Size, dtype)
    assert _NUMBER.sub("#", expected) == _NUMBER.sub("#", actual), (expected, actual)
    for e, a in zip(_NUMBER.findall(expected), _NUMBER.findall(actual)):
        ef, af = float(e), float(a)
        ok = (math.isnan(ef) and math.isnan(af)) or math.isclose(ef, af, rel_tol=rtol,
                                                                 abs_tol=atol)
        assert ok, f"{e} != {a}\n--- torch:\n{expected}\n--- ndgrad:\n{actual}"


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_torch(name: str) -> None:
    pytest.importorskip("torch")
    expected = run(name, "torch")
    actual = run(name, "ndgrad")
    compare(expected, actual, RTOL.get(name, 1e-4))


if __name__ == "__main__":      # a status table: which programs run and match
    if len(sys.argv) > 1:
        sys.path.insert(0, sys.argv[1])
    for name in PROGRAMS:
        try:
            compare(run(name, "torch"), run(name, "ndgrad"), RTOL.get(name, 1e-4))
            status = "matches"
        except AssertionError as e:
            status = "differs: " + str(e).splitlines()[0][:150]
        except Exception as e:  # noqa: BLE001  (a report of whatever the program raised)
            status = f"fails: {type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}"
        print(f"{name:24s} {status}")
