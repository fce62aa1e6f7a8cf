"""Write ``docs/ops.md``: every entry of the op table with what it supports.

``python -m tools.gen_ops_doc`` writes the file; ``--check`` exits 1 if it is out of date
(``tests/test_ops_doc.py`` runs the same comparison, so CI fails on a stale file). Nothing in the
table is written by hand; each column is derived:

- **op**: an ``Op``'s name in ``ndgrad.ops._dispatch.REGISTRY`` (several ``Op`` objects may share
  a name: an op with a Scalar overload, ``mul`` and ``mul.Scalar`` ...), and **node**: the
  backward node class each records, named as PyTorch names it.
- **torch names**: the public functions, Tensor methods and operators (every name with a
  declared signature in ``ndgrad/_signatures.py``, the other functions of ``ndgrad`` and of
  ``ndgrad.linalg``, ``fft``, ``special`` and ``nn.functional``) whose implementation applies the
  op: the implementation's code (and its closure) is scanned for the ``Op`` objects it names,
  directly, as an attribute of an ndgrad module, or through the private helpers of its module.
  "–": no public name reaches it directly (an in-place variant bound by a generic helper, a
  backward-only op).
- **VJP**, **JVP**: the ``Op`` has a ``vjp`` / ``jvp`` rule.
- **2nd order**: the VJP is itself differentiated by the tests: "yes" when an entry of
  ``tests/op_db.py`` with ``double_backward=True`` runs the op (its second order is compared
  with finite differences and PyTorch), or a ``gradgrad`` check of an entry of
  ``docs/op_coverage.md`` (PyTorch's OpInfo database) that reaches it passes; "untested" else.
- **batching**: the op has a rule in ``ndgrad.ops._batching.RULES`` (vectorized Jacobians,
  ``is_grads_batched``); "via VJP" if it is in ``VJP_ONLY``.
- **graph path**: the op is in ``ndgrad.jit.supported_ops()``. Contract: when the package
  ``ndgrad.jit`` exists it provides ``supported_ops() -> Iterable[str]``, the op-table names
  (``Op.name``, the first column) that the graph path (tracing, symbolic differentiation,
  code generation) handles. If ``ndgrad.jit`` or that function is absent, the column says "no".
- **dtypes checked**: the dtypes whose results the tests compare with PyTorch for an entry that
  reaches the op: float64 (an entry of ``tests/op_db.py``, or a passing ``forward`` check of
  ``docs/op_coverage.md``) and float32/float16/bfloat16 (a passing ``lowp`` check).

Ops whose name starts with ``_`` are internal (view replay, backward helpers) and listed apart.

Example:
    >>> from tools.gen_ops_doc import render
    >>> "| `mul` |" in render()
    True
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import sys
import types
from typing import Any, Iterable

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "ops.md"
COVERAGE = ROOT / "docs" / "op_coverage.md"
LOWP = ("float32", "float16", "bfloat16")


def _load() -> None:
    import ndgrad
    for m in ("ndgrad.nn.functional", "ndgrad.linalg", "ndgrad.fft", "ndgrad.special"):
        importlib.import_module(m)
    del ndgrad


def _impl(fn: Any) -> Any:
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def _code_names(code: types.CodeType) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def ops_applied(fn: Any, depth: int = 2) -> set:
    """The ``Op`` objects ``fn``'s code names (through private helpers of its module too)."""
    from ndgrad.ops._dispatch import Op
    fn = _impl(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return set()
    glob = fn.__globals__
    found: set = set()
    cells = {name: c.cell_contents for name, c in zip(code.co_freevars, fn.__closure__ or ())
             if _filled(c)}
    names = _code_names(code) | set(cells)
    # autocast's casts (Note [Autocast]) are not the function's own ops
    modules = [glob[n] for n in names if inspect.ismodule(glob.get(n)) and
               glob[n].__name__.startswith("ndgrad") and glob[n].__name__ != "ndgrad.ops._autocast"]
    for name in names:
        v = cells[name] if name in cells else glob.get(name)
        if v is None:           # ``ops.getitem``: an attribute of a module the code names
            v = next((getattr(m, name) for m in modules if hasattr(m, name)), None)
            if inspect.isfunction(v) and v.__module__.startswith("ndgrad.ops"):
                found |= ops_applied(v, depth - 1) if depth > 0 else set()
                continue
        if isinstance(v, Op):
            found.add(v)
        elif isinstance(v, (tuple, list, frozenset, set)):
            found |= {x for x in v if isinstance(x, Op)}
        elif isinstance(v, dict):
            found |= {x for x in v.values() if isinstance(x, Op)}
        elif depth > 0 and inspect.isfunction(v) and v.__module__ == fn.__module__ and (
                name.startswith("_") or name in cells):
            found |= ops_applied(v, depth - 1)
    return found


def _filled(cell: Any) -> bool:
    try:
        return cell.cell_contents is not cell
    except ValueError:          # an empty cell
        return False


_NOT_OPERATORS = {"init", "repr", "reduce_ex", "deepcopy", "array", "len", "iter", "bool",
                  "float", "int", "index", "complex", "setstate", "getstate", "hash",
                  "format", "array_wrap", "dlpack", "dlpack_device"}


def public_entry_points() -> dict:
    """``{public name: callable}``: ``ndgrad.<f>``, ``Tensor.<m>``, ``ndgrad.linalg.<f>`` ..."""
    import ndgrad
    from ndgrad import _signatures
    from ndgrad.tensor import Tensor
    out: dict = {}
    blocks = (_signatures.FUNCTIONS_AND_METHODS, _signatures.FUNCTIONS)
    for block in blocks:
        for schema in _signatures._entries(block):
            name = _signatures._name(schema)
            if hasattr(ndgrad, name):
                out[name] = getattr(ndgrad, name)
    for name, v in vars(ndgrad).items():
        if not name.startswith("_") and inspect.isfunction(v):
            out.setdefault(name, v)
    for schema in _signatures._entries(_signatures.METHODS):
        name = _signatures._name(schema)
        out.setdefault(f"Tensor.{name}", getattr(Tensor, name))
    for name, v in vars(Tensor).items():
        operator = name.startswith("__") and name[2:-2] not in _NOT_OPERATORS
        if (operator or not name.startswith("_")) and inspect.isfunction(v) and \
                f"Tensor.{name}" not in out:
            out[f"Tensor.{name}"] = v
    for ns in ("linalg", "fft", "special", "nn.functional"):
        mod = importlib.import_module(f"ndgrad.{ns}")
        for name in getattr(mod, "__all__", None) or dir(mod):
            v = getattr(mod, name, None)
            if not name.startswith("_") and inspect.isfunction(v):
                out[f"{ns}.{name}"] = v
    return out


def _op_db_runs() -> tuple:
    """``(ops run by some tests/op_db.py entry, ops run by one with double_backward)``: each
    entry's first sample, run once with every Op's forward recorded."""
    import numpy as np

    import ndgrad
    from ndgrad.ops._dispatch import REGISTRY
    sys.path.insert(0, str(ROOT))
    try:
        from tests import op_db
    finally:
        sys.path.pop(0)
    seen: set = set()
    originals = {}
    current: list = []
    for ops in REGISTRY.values():
        for op in ops:
            originals[op] = op.forward

            def rec(*a: Any, _op: Any = op, _f: Any = op.forward) -> Any:
                current.append(_op)
                return _f(*a)
            op.forward = rec
    run, gradgrad = set(), set()
    try:
        for info in op_db.OPS:
            current.clear()
            rng = np.random.default_rng(0)
            arrays = op_db.make_inputs(info, info.samples[0], rng)
            xs = [ndgrad.tensor(a, requires_grad=info.differentiable) for a in arrays]
            try:
                info.fn(ndgrad, *xs)
            except Exception:        # an entry meant for another sample shape: not counted
                continue
            seen = set(current)
            run |= seen
            if info.differentiable and info.double_backward:
                gradgrad |= seen
    finally:
        for op, f in originals.items():
            op.forward = f
    return run, gradgrad


def _coverage() -> dict:
    """``{entry name: {check: status}}`` from docs/op_coverage.md."""
    rows: dict = {}
    header: list = []
    for line in COVERAGE.read_text().splitlines():
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "entry":
            header = cells
            continue
        if header and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = dict(zip(header[1:], cells[1:]))
    return rows


def jit_supported() -> set:
    """The graph path's op names (the contract in the module docstring)."""
    try:
        jit = importlib.import_module("ndgrad.jit")
    except ImportError:
        return set()
    fn = getattr(jit, "supported_ops", None)
    return set(fn()) if callable(fn) else set()


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _all_any(flags: Iterable[bool]) -> str:
    flags = list(flags)
    return "yes" if all(flags) else "partly" if any(flags) else "no"


def render() -> str:
    _load()
    from ndgrad.ops import _batching
    from ndgrad.ops._dispatch import REGISTRY
    entry_points = public_entry_points()
    reached: dict = {}
    for pub, fn in entry_points.items():
        for op in ops_applied(fn):
            reached.setdefault(op.name, set()).add(pub)
    run, gradgrad = _op_db_runs()
    coverage = _coverage()
    graph = jit_supported()

    def cov_entries(name: str) -> list:
        out = []
        for pub in reached.get(name, ()):
            key = pub[len("Tensor."):] if pub.startswith("Tensor.") else pub
            for entry, checks in coverage.items():
                if entry == key or entry.startswith(key + "/"):
                    out.append(checks)
        return out

    public_rows, internal_rows = [], []
    for name in sorted(REGISTRY, key=lambda n: (n.lstrip("_").lower(), n)):
        ops = REGISTRY[name]
        cov = cov_entries(name)
        has_vjp = [op.vjp is not None for op in ops]
        if not any(has_vjp):
            second = "–"
        elif any(op in gradgrad for op in ops) or any(c.get("gradgrad") == "ok" for c in cov):
            second = "yes"
        else:
            second = "untested"
        batching = _all_any(_batching.supports(op) for op in ops)
        if batching == "no" and any(op in _batching.VJP_ONLY for op in ops):
            batching = "via VJP"
        dtypes = []
        if any(op in run for op in ops) or any(c.get("forward") == "ok" for c in cov):
            dtypes.append("float64")
        if any(c.get("lowp") == "ok" for c in cov):
            dtypes += LOWP
        torch_names = ", ".join(f"`{p}`" for p in sorted(reached.get(name, ()))) or "–"
        nodes = ", ".join(sorted({f"`{op.node_name}`" for op in ops}))
        row = (f"| `{name}` | {nodes} | {torch_names} | {_all_any(has_vjp)} | "
               f"{_all_any(op.jvp is not None for op in ops)} | {second} | {batching} | "
               f"{_yes(name in graph)} | {', '.join(dtypes) or '–'} |")
        (internal_rows if name.startswith("_") else public_rows).append(row)
    head = ("| op | node | torch names | VJP | JVP | 2nd order | batching | graph path | "
            "dtypes checked |\n|---|---|---|---|---|---|---|---|---|\n")
    n_ops = sum(len(v) for v in REGISTRY.values())
    return (
        "# The op table\n\n"
        "Generated by `python -m tools.gen_ops_doc` from the op table "
        "(`ndgrad.ops._dispatch.REGISTRY`), the declared signatures (`ndgrad/_signatures.py`), "
        "`tests/op_db.py` and `docs/op_coverage.md`; how each column is derived is in "
        "`tools/gen_ops_doc.py`'s docstring. Do not edit by hand: CI fails when it is out of "
        "date.\n\n"
        f"{len(REGISTRY)} op names, {n_ops} `Op` entries. **torch names**: the public functions "
        "and methods that apply the op; **2nd order**: the VJP is differentiated again in the "
        "tests; **batching**: a vectorization rule (batched gradients, vectorized Jacobians); "
        "**graph path**: supported by `ndgrad.jit`; **dtypes checked**: compared with PyTorch "
        "in those dtypes.\n\n"
        "## Ops\n\n" + head + "\n".join(public_rows) + "\n\n"
        "## Internal ops\n\nUsed by view replay, in-place updates and backward rules; not "
        "called directly.\n\n" + head + "\n".join(internal_rows) + "\n")


def main(argv: list) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is out of date: run `python -m tools.gen_ops_doc`")
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
