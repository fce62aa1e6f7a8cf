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
from .ir import ArrayArg, Block, Graph, LintError, Node, TensorArg, Value
from .tracer import TraceError, TraceResult, flatten, trace_graph, unflatten
from .api import compile, trace  # noqa: E402  (jit-exec: the user entry points)

__all__ = ["Graph", "Block", "Node", "Value", "TensorArg", "ArrayArg", "LintError", "TraceError",
           "TraceResult", "trace_graph", "flatten", "unflatten", "interpret", "differentiate",
           "Gradient", "trace", "compile"]
