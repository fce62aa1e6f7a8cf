"""ndgrad's graph path (seed 004): trace a function into a ``Graph``, differentiate it into a
``Gradient``, optimize, interpret or generate code (see Note [Graph interface] in ir.py and
Note [Tracing] in tracer.py).

Example:
    >>> import ndgrad
    >>> from ndgrad import jit
    >>> a, b = ndgrad.ones(2, requires_grad=True), ndgrad.ones(2, requires_grad=True)
    >>> r = jit.trace_graph(lambda a, b: a * b * a + b, (a, b))
    >>> [n.kind() for n in r.graph.nodes()]
    ['mul', 'mul', 'add']
"""

from .differentiate import differentiate
from .gradient import Gradient
from .interpret import interpret
from .random_nodes import TRACEABLE_RANDOM_OPS
from .ir import ArrayArg, Block, Graph, LintError, Node, TensorArg, Value
from .tracer import TraceError, TraceResult, flatten, trace_graph, unflatten
from .api import compile  # noqa: E402  (jit-exec: the user entry points)
from .tracer import DATA_DEPENDENT_SHAPE_OPS, RANDOM_OPS
from ..ops._dispatch import REGISTRY


def supported_ops() -> frozenset:
    """The op-table names (``Op.name``) the graph path traces, differentiates and compiles:
    every op except those whose output shape depends on the data, which the tracer refuses with
    a ``TraceError``. Random ops draw at run time (Note [Random nodes] in random_nodes.py).
    ``tests/test_jit_ops.py`` runs every op of ``tests/op_db.py`` through the graph path, and
    ``tools/gen_ops_doc.py`` reads this for docs/ops.md's "graph path" column.

    >>> import ndgrad
    >>> ops = ndgrad.jit.supported_ops()
    >>> "mul" in ops, "bernoulli" in ops, "nonzero" in ops
    (True, True, False)
    """
    return frozenset(REGISTRY) - (RANDOM_OPS - TRACEABLE_RANDOM_OPS) - DATA_DEPENDENT_SHAPE_OPS

# TorchScript's Python API (Note [Scripting runs Python] in torchscript.py): its scripted and traced
# modules are nn.Modules, so it loads on first use
_SCRIPT_API = frozenset({
    "script", "trace", "trace_module", "ScriptModule", "RecursiveScriptModule", "ScriptFunction",
    "TracedModule", "TopLevelTracedModule", "save", "load", "ignore", "unused", "export",
    "is_scripting", "is_tracing", "annotate", "Final", "Attribute", "fork", "wait", "Future",
    "freeze", "optimize_for_inference", "interface", "script_method", "script_if_tracing",
    "Error", "TracerWarning", "TracingCheckError", "optimized_execution", "set_fusion_strategy",
    "enable_onednn_fusion", "onednn_fusion_enabled", "strict_fusion", "fuser", "isinstance"})


def __getattr__(name: str) -> object:
    if name in _SCRIPT_API:
        from . import torchscript  # local import: its scripted modules are nn.Modules
        return getattr(torchscript, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Graph", "Block", "Node", "Value", "TensorArg", "ArrayArg", "LintError", "TraceError",
           "TraceResult", "trace_graph", "flatten", "unflatten", "interpret", "differentiate",
           "Gradient", "trace", "compile", "supported_ops"]
