"""The package's import layering (Note [Layers] in ndgrad/autograd/__init__.py): every import
inside ``ndgrad``, at module level or inside a function, points down or sideways, never up.

The test reads the sources with ``ast`` (nothing is imported), so it sees imports that only
run when a function is called. Counted as imports: ``import``/``from ... import`` statements,
``importlib.import_module("ndgrad...")``, ``sys.modules["ndgrad..."]`` and
``sys.modules.get("ndgrad...")`` with a constant name, and, for a module outside a package,
the package's ``__init__`` that importing one of its modules runs first.
"""

from __future__ import annotations

import ast
import functools
import pathlib
from typing import Iterator, NamedTuple, Optional

ROOT = pathlib.Path(__file__).resolve().parent.parent / "ndgrad"

# Layers, bottom (0) to top. An import may point to its own layer or a lower one.
BOTTOM, RUNTIME, OPS_CORE, OPS, API, PRACTICAL = range(6)
LAYER_NAMES = ("bottom", "runtime", "ops core", "ops", "api", "practical")

# 5. the practical layer (DESIGN.md: nn, optim, utils.data, distributed; and distributions),
# written with the public API like user code: every module under these packages (so the API
# imports none of them). fx and export trace nn.Modules into graphs and GraphModules.
PRACTICAL_PACKAGES = ("ndgrad.nn", "ndgrad.optim", "ndgrad.utils.data", "ndgrad.distributed",
                      "ndgrad.distributions", "ndgrad.fx", "ndgrad.export")

LAYERS = {
    # 0. dtypes, layouts, printing, Tensor (an ndarray plus autograd state) and its factories.
    # grad_mode and hooks are the runtime's two leaf modules (no ndgrad import at all) that
    # the Tensor's own state is made of; the autograd package's __init__ imports only
    # grad_mode at load time (the rest on first attribute access), so importing any runtime
    # module never loads the API.
    "ndgrad._dtype": BOTTOM,
    "ndgrad._unsigned": BOTTOM,
    "ndgrad._meta": BOTTOM,
    "ndgrad._layout": BOTTOM,
    "ndgrad.return_types": BOTTOM,
    "ndgrad._format": BOTTOM,
    "ndgrad.tensor": BOTTOM,
    "ndgrad._numpy_protocol": BOTTOM,
    "ndgrad._settings": BOTTOM,
    "ndgrad._refcounts": BOTTOM,
    "ndgrad._warn": BOTTOM,
    "ndgrad._aligned": BOTTOM,
    "ndgrad._creation": BOTTOM,
    "ndgrad._generator": BOTTOM,
    "ndgrad._sparse": BOTTOM,
    "ndgrad._sparse_compressed": BOTTOM,
    "ndgrad._signature": BOTTOM,
    "ndgrad._torch_function": BOTTOM,
    "ndgrad._out": BOTTOM,
    "ndgrad._write_watch": BOTTOM,
    "ndgrad._dlpack": BOTTOM,
    "ndgrad.types": BOTTOM,
    "ndgrad.torch_version": BOTTOM,
    "ndgrad.version": BOTTOM,
    "ndgrad.autograd": BOTTOM,
    "ndgrad.autograd.grad_mode": BOTTOM,
    "ndgrad.autograd.hooks": BOTTOM,
    "ndgrad.cuda": BOTTOM,
    "ndgrad.xpu": BOTTOM,
    "ndgrad.accelerator": BOTTOM,
    "ndgrad.cpu": BOTTOM,
    "ndgrad.backends": BOTTOM,
    "ndgrad.backends.cuda": BOTTOM,
    "ndgrad.backends.cudnn": BOTTOM,
    "ndgrad.backends.mps": BOTTOM,
    "ndgrad.backends.mkldnn": BOTTOM,
    "ndgrad.backends.openmp": BOTTOM,
    "ndgrad.backends.cpu": BOTTOM,
    "ndgrad.backends.mha": BOTTOM,
    "ndgrad.mps": BOTTOM,                   # torch.mps without Metal (session 26)
    "ndgrad.mps.event": BOTTOM,
    "ndgrad.mps.profiler": BOTTOM,
    # 1. the graph runtime: knows no individual op.
    "ndgrad.autograd.node": RUNTIME,
    "ndgrad.autograd.engine": RUNTIME,
    "ndgrad.autograd.accumulate_grad": RUNTIME,
    "ndgrad.autograd.saved": RUNTIME,
    "ndgrad.autograd.anomaly_mode": RUNTIME,
    "ndgrad.autograd.profiler": RUNTIME,
    "ndgrad.autograd.batching": RUNTIME,
    # 2. the op table's machinery: the dispatcher, JVP shorthands, argument helpers, views and
    # in-place, batching rules. 3. the op families (every other ndgrad.ops module).
    "ndgrad.ops._dispatch": OPS_CORE,
    "ndgrad.ops._jvp": OPS_CORE,
    "ndgrad.ops._util": OPS_CORE,
    "ndgrad.ops._workspace": OPS_CORE,
    "ndgrad.ops._scipy_threads": OPS_CORE,
    "ndgrad.ops._deprecations": OPS_CORE,
    "ndgrad.ops._std_sort": OPS_CORE,
    "ndgrad.ops._selection_orders": OPS_CORE,
    "ndgrad.ops.views_inplace": OPS_CORE,
    "ndgrad.ops._batching": OPS_CORE,
    "ndgrad.ops._namespaces": OPS_CORE,     # ndgrad.ops.<ns> of ndgrad.library (session 26)
    "ndgrad.ops._second_order": OPS_CORE,
    "ndgrad.ops._ties": OPS_CORE,
    "ndgrad.ops._channels_last": OPS_CORE,
    # 4. the user-facing API.
    "ndgrad": API,
    "ndgrad.__main__": API,
    "ndgrad._tensor_methods": API,
    "ndgrad._foreach": API,
    "ndgrad.overrides": API,               # the __torch_function__ protocol's public names
    "ndgrad._C": API,
    "ndgrad.legacy_tensor_types": API,
    "ndgrad._compat": API,                  # torch's other spellings (compat, session 22)
    "ndgrad._compat_methods": API,
    "ndgrad._compat_random": API,
    "ndgrad._compat_windows": API,
    "ndgrad._control_flow": API,
    "ndgrad._compat_sparse": API,
    "ndgrad._legacy_storage": API,
    "ndgrad.autograd._tensor_like": API,
    "ndgrad.func._functionalize": API,
    "ndgrad._signatures": API,
    "ndgrad.autograd.api": API,
    "ndgrad.autograd.function": API,
    "ndgrad.autograd.functional": API,
    "ndgrad._lobpcg": API,
    "ndgrad.quasirandom": API,
    "ndgrad.testing": API,
    "ndgrad.utils.hooks": API,
    "ndgrad.autograd.forward_ad": API,
    "ndgrad.autograd.gradcheck": API,
    "ndgrad.autograd.graph": API,
    "ndgrad.autograd.saved_mutation": API,
    # the practical layer (nn, optim, utils are API too, by the default rule below): pictures of
    # graphs, DLPack exchange.
    "ndgrad.viz": API,
    "ndgrad.amp": API,
    "ndgrad.amp.autocast_mode": API,
    "ndgrad.amp.grad_scaler": API,
    "ndgrad.cpu.amp": API,
    "ndgrad.cuda.amp": API,
    "ndgrad.viz.dot": API,
    "ndgrad.utils.dlpack": API,
    # torch.func's transforms, built on the autograd API, forward AD and batch levels.
    "ndgrad.func": API,
    "ndgrad.func._pytree": API,
    "ndgrad.utils._pytree": API,           # torch.utils._pytree; func's pytrees use it
    "ndgrad.func._common": API,
    "ndgrad.func._rng": API,
    "ndgrad.func._reverse": API,
    "ndgrad.func._forward": API,
    "ndgrad.func._vmap": API,
    # the graph path (seed 004): IR, tracer, interpreter, differentiate, passes
    "ndgrad.jit": API,
    "ndgrad.jit.ir": API,
    "ndgrad.jit.tracer": API,
    "ndgrad.jit.interpret": API,
    "ndgrad.jit.passes": API,
    "ndgrad.jit.differentiate": API,
    "ndgrad.jit.gradient": API,
    "ndgrad.jit.codegen": API,
    "ndgrad.jit.executor": API,
    "ndgrad.jit.api": API,
    "ndgrad.jit.config": API,
    "ndgrad._dynamo": API,
    "ndgrad.jit.stack_batching": API,
    "ndgrad.jit.random_nodes": API,
    "ndgrad.jit.numba_backend": API,
    "ndgrad.jit.blas_threads": API,
    "ndgrad.jit.gemm_layout": API,
    "ndgrad.jit.numba_kernels": API,
    # TorchScript's Python API returns nn.Modules: practical, like nn (loaded on first use)
    "ndgrad.jit.torchscript": PRACTICAL,
    "ndgrad._threads": API,
    # torch.profiler's API on the autograd profiler's events; shared memory and storage
    # windows (bound as Tensor methods by _tensor_methods); torch.multiprocessing.
    "ndgrad.profiler": API,
    "ndgrad._shared_memory": API,
    "ndgrad.storage": API,
    "ndgrad.multiprocessing": API,
    "ndgrad.multiprocessing.spawn": API,
    # session 26: torch.utils.benchmark, torch.hub, torch.library
    "ndgrad.utils.benchmark": API,
    "ndgrad.utils.benchmark.utils": API,
    "ndgrad.utils.benchmark.utils.common": API,
    "ndgrad.utils.benchmark.utils.timer": API,
    "ndgrad.utils.benchmark.utils.compare": API,
    "ndgrad.utils.benchmark.utils.fuzzer": API,
    "ndgrad.hub": API,
    "ndgrad.utils.model_zoo": API,
    "ndgrad._library_schema": API,
    "ndgrad.library": API,
}


# A name imported from the autograd package itself (``from ndgrad.autograd import backward``)
# is its API, bound by ``_load`` (the package's module-level code is bottom layer).
PACKAGE_NAMES = {"ndgrad.autograd": "ndgrad.autograd (package API names)"}
LAYERS["ndgrad.autograd (package API names)"] = API


def layer(mod: str) -> int:
    """A module's layer: listed above; other ``ndgrad.ops`` modules are op families; any other
    module not listed is taken as API (a new public namespace such as ``ndgrad.linalg``). A
    helper module an op family imports must be listed at a lower layer."""
    if mod in LAYERS:
        return LAYERS[mod]
    if any(mod == p or mod.startswith(p + ".") for p in PRACTICAL_PACKAGES):
        return PRACTICAL
    if mod == "ndgrad.ops" or mod.startswith("ndgrad.ops."):
        return OPS
    if mod.startswith("ndgrad.autograd."):
        raise AssertionError(f"{mod}: a new module of ndgrad.autograd must be given a layer in "
                             "tests/test_layering.py LAYERS (runtime or api)")
    return API


# The function-local imports that point upward and must stay, each with the reason (the source
# line carries a ``# local import:`` comment too). Keys: (importing module, imported module).
ALLOWED_UPWARD = {
    ("ndgrad.serialization", "ndgrad.nn.parameter"):
        "a checkpoint holding parameters is loaded as nn.Parameter objects; nn (practical "
        "layer) sits above serialization",
    ("ndgrad.serialization", "ndgrad.nn"):
        "the package ndgrad.nn runs first when ndgrad.nn.parameter is imported (above)",
    ("ndgrad.func", "ndgrad.nn.*"):
        "torch.func.functional_call swaps a module's parameters: it forwards to "
        "nn.utils.stateless (practical layer), loaded only when called",
    ("ndgrad.func", "ndgrad.nn"):
        "the package ndgrad.nn runs first when ndgrad.nn.utils.stateless is imported (above)",
    ("ndgrad.jit.tracer", "ndgrad.nn.functional"):
        "while tracing, nn.functional's kernels that compute part of their result outside the "
        "op table are recorded whole as Call nodes; the tracer looks the module up only if the "
        "user loaded it",
    ("ndgrad.jit.tracer", "ndgrad.nn"):
        "the package ndgrad.nn runs first when ndgrad.nn.functional is looked up (above)",
    ("ndgrad.jit", "ndgrad.jit.torchscript"):
        "torch.jit's scripting API (script, trace of modules, save/load ...) returns "
        "nn.Modules; the package's __getattr__ loads it on first use",
    ("ndgrad.jit.api", "ndgrad.nn.modules.module"):
        "ndgrad.compile(module) returns an nn.Module (OptimizedModule), as torch.compile "
        "does; the check imports nn only when compile is called",
    ("ndgrad.jit.api", "ndgrad.nn.compiled"):
        "the OptimizedModule that ndgrad.compile(module) returns (above)",
    ("ndgrad.jit.api", "ndgrad.nn"):
        "the package ndgrad.nn runs first when its modules are imported (above)",
    ("ndgrad.jit.api", "ndgrad.nn.modules"):
        "the package ndgrad.nn.modules runs first when nn.modules.module is imported (above)",
    ("ndgrad.ops.linalg_decomp", "ndgrad.autograd.forward_ad"):
        "a decomposition saves several outputs after apply; their tangents are shared the way "
        "apply shares its saved result (a saves=('result0', ...) option in the dispatcher "
        "would remove this)",
    ("ndgrad.autograd", "ndgrad.autograd.*"):
        "_load(), called by ndgrad/__init__.py once the op table exists, binds the package's "
        "API names; the package's __init__ itself also runs when tensor.py imports grad_mode, "
        "so it must not load the API at module level",
    ("ndgrad.ops._batching", "ndgrad.ops.*"):
        "install() reads the op families' Op objects to register their rules; the families "
        "import _batching (call, marked) at module level",
    ("ndgrad.ops.views_inplace", "ndgrad.ops.pointwise"):
        "masked_fill_ is a pointwise op; pointwise imports views_inplace (through _batching)",
    ("ndgrad.ops.views_inplace", "ndgrad.ops.shape"):
        "the base-regenerating views are shape ops; shape imports views_inplace at module "
        "level",
}


class Import(NamedTuple):
    path: pathlib.Path
    line: int
    importer: str
    target: str
    local: bool        # inside a function body
    commented: bool    # a ``# local import:`` comment on the statement or the line above


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _is_module(name: str) -> bool:
    rel = pathlib.Path(*name.split("."))
    base = ROOT.parent / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _const_str(node: ast.AST) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_sys_modules(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "modules" and \
        isinstance(node.value, ast.Name) and node.value.id == "sys"


def _targets(node: ast.AST, package: str) -> list:
    """The ndgrad modules one AST node imports."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "ndgrad"]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")
            base = base[:len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        if mod.split(".")[0] != "ndgrad":
            return []
        out = []
        for a in node.names:
            sub = f"{mod}.{a.name}"
            out.append(sub if _is_module(sub) else PACKAGE_NAMES.get(mod, mod))
        return sorted(set(out))
    if isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name == "import_module" and node.args:
            s = _const_str(node.args[0])
            if s and s.split(".")[0] == "ndgrad":
                return [s]
        if name == "get" and node.args and _is_sys_modules(f.value if isinstance(
                f, ast.Attribute) else None):
            s = _const_str(node.args[0])
            if s and s.split(".")[0] == "ndgrad":
                return [s]
    if isinstance(node, ast.Subscript):
        if _is_sys_modules(node.value):
            s = _const_str(node.slice)
            if s and s.split(".")[0] == "ndgrad":
                return [s]
    return []


@functools.cache
def imports() -> tuple:
    """Every ndgrad import of every ndgrad module."""
    return tuple(i for path in sorted(ROOT.rglob("*.py")) for i in _scan(path))


def _scan(path: pathlib.Path) -> Iterator[Import]:
    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines), str(path))

    def commented(node: ast.AST) -> bool:
        # On the statement's lines or in the comment block right above it.
        first = node.lineno - 1
        while first > 0 and lines[first - 1].lstrip().startswith("#"):
            first -= 1
        last = getattr(node, "end_lineno", node.lineno)
        return any("# local import:" in s for s in lines[first:last])

    def walk(node: ast.AST, local: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                assert isinstance(child, ast.If)
                for other in child.orelse:          # what runs
                    yield from walk(ast.Module(body=[other], type_ignores=[]), local)
                continue
            for target in _targets(child, package):
                yield Import(path, child.lineno, mod, target, local, local and commented(child))
                # Importing a module first runs its packages' __init__ (which is within the
                # importer's own package, or the root, always loaded first).
                parts = target.split(".")
                for k in range(2, len(parts)):
                    parent = ".".join(parts[:k])
                    if not (mod + ".").startswith(parent + ".") and _is_module(parent):
                        yield Import(path, child.lineno, mod, parent, local,
                                     local and commented(child))
            inner = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from walk(child, local or inner)

    yield from walk(tree, False)


def _type_checking_only(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:``: its body imports what a type checker reads and Python never runs
    (Note [Typed API] in ndgrad/types.py), so it cannot break the layering (its else runs)."""
    if not isinstance(node, ast.If):
        return False
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _allowed(imp: Import) -> bool:
    if not imp.local:
        return False
    for (src, dst) in ALLOWED_UPWARD:
        if src == imp.importer and (dst == imp.target or dst.endswith(".*") and
                                    imp.target.startswith(dst[:-1])):
            return True
    return False


def _where(imp: Import) -> str:
    kind = "function-local import" if imp.local else "import"
    return (f"{imp.path.relative_to(ROOT.parent)}:{imp.line}: {kind} of {imp.target} "
            f"({LAYER_NAMES[layer(imp.target)]}) from {imp.importer} "
            f"({LAYER_NAMES[layer(imp.importer)]})")


def test_no_upward_imports() -> None:
    bad = [_where(i) for i in imports()
           if layer(i.target) > layer(i.importer) and not _allowed(i)]
    assert not bad, ("imports pointing up the layers (Note [Layers] in "
                     "ndgrad/autograd/__init__.py):\n  " + "\n  ".join(bad) +
                     "\nImport from a lower layer, let the layer above register what the lower "
                     "one needs, or (a function-local import that must stay) add it to "
                     "ALLOWED_UPWARD with the reason. A module not in LAYERS counts as api "
                     "(ndgrad.ops.* as an op family): list a new helper module there.")


def test_allow_list_is_used() -> None:
    # Every allowed upward import still exists (a stale entry would hide a new one).
    found = {(i.importer, i.target) for i in imports() if i.local}
    for src, dst in ALLOWED_UPWARD:
        assert any(s == src and (t == dst or dst.endswith(".*") and t.startswith(dst[:-1]))
                   for s, t in found), f"stale ALLOWED_UPWARD entry {(src, dst)}"


def test_local_imports_say_why() -> None:
    # Outside the op families, a function-local import says why it is not at module level.
    # The op families are exempt for imports within their layer or below: a family's VJP
    # often uses another family's ops, and with many families the cycles between them are
    # expected (module level is still preferred where there is no cycle).
    bad = [_where(i) for i in imports() if i.local and not i.commented and
           not (layer(i.importer) == OPS and layer(i.target) <= OPS)]
    assert not bad, ("a function-local import is the exception: import at module level, or "
                     "say why on the line (``# local import: <why>``):\n  " + "\n  ".join(bad))


def test_module_level_imports_are_acyclic() -> None:
    graph: dict = {}
    for i in imports():
        if not i.local and i.target != i.importer:
            graph.setdefault(i.importer, set()).add(i.target)
    state: dict = {}
    stack: list = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if n == "ndgrad" or (m + ".").startswith(n + "."):
                continue     # a module's own packages are loaded before it
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                raise AssertionError("module-level import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_layers_cover_the_package() -> None:
    # Every listed module exists (a renamed module must be renamed here too).
    missing = [m for m in LAYERS if m not in PACKAGE_NAMES.values() and not _is_module(m)]
    assert not missing, f"LAYERS lists modules that do not exist: {missing}"
