"""docs/ops.md is generated from the op table (tools/gen_ops_doc.py): CI fails when it is out
of date, and its graph-path column follows the ``ndgrad.jit.supported_ops()`` contract."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import types

from tools import gen_ops_doc

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _row(text: str, op: str) -> list:
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| `{op}` |"))
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_ops_doc_is_up_to_date():
    # In a fresh interpreter: tests that declare Ops of their own add them to REGISTRY.
    r = subprocess.run([sys.executable, "-m", "tools.gen_ops_doc", "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_columns_are_derived_from_the_table():
    text = gen_ops_doc.render()
    mul = _row(text, "mul")
    assert "`MulBackward0`" in mul[1] and "`mul`" in mul[2] and "`Tensor.__mul__`" in mul[2]
    assert mul[3:6] == ["yes", "yes", "yes"]          # VJP, JVP, second order
    assert mul[6] == "yes" and "float16" in mul[8]    # batching rule, low-precision checks
    # A backward-only op: no public name applies it; its own VJP is not differentiated again.
    tb = _row(text, "tanh_backward")
    assert tb[2] == "–" and tb[3] == "yes" and tb[5] == "untested"
    # Internal ops are listed apart, after the public ones.
    assert text.index("| `_zero_at` |") > text.index("## Internal ops") > text.index("| `mul` |")


def test_graph_path_column_reads_ndgrad_jit(monkeypatch):
    import ndgrad
    fake = types.ModuleType("ndgrad.jit")
    fake.supported_ops = lambda: ["mul", "exp"]       # the contract: op-table names
    monkeypatch.setitem(sys.modules, "ndgrad.jit", fake)
    monkeypatch.setattr(ndgrad, "jit", fake, raising=False)
    text = gen_ops_doc.render()
    assert _row(text, "mul")[7] == "yes" and _row(text, "exp")[7] == "yes"
    assert _row(text, "sin")[7] == "no"
    del fake.supported_ops                              # a package without the function
    text = gen_ops_doc.render()
    assert _row(text, "mul")[7] == "no"
