"""``ndgrad.fx`` (torch.fx): symbolic tracing of modules and functions into Graphs of Nodes,
GraphModules that run (edited) graphs as generated Python code, Interpreters and Transformers
over graphs, ``passes.shape_prop`` and ``subgraph_rewriter.replace_pattern``.

Differences from torch.fx (Note [FX names] in ``_names.py``): generated code spells ndgrad's
functions ``torch.<path>`` with ``torch`` bound to ndgrad (the official tutorials print the
same text under both); functions torch keeps in ``torch._C._nn`` (``F.linear``) are named
``torch.nn.functional.<name>``; no stack-trace comments in ``print_readable``.

Example:
    >>> import ndgrad, ndgrad.fx as fx
    >>> gm = fx.symbolic_trace(lambda x: (x * 2).sum())
    >>> gm.graph.print_tabular()
    opcode         name    target                   args      kwargs
    -------------  ------  -----------------------  --------  --------
    placeholder    x       x                        ()        {}
    call_function  mul     <built-in function mul>  (x, 2)    {}
    call_method    sum_1   sum                      (mul,)    {}
    output         output  output                   (sum_1,)  {}
"""

from __future__ import annotations

from typing import Any

from ._symbolic_trace import PH, Tracer, has_side_effect, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy, TraceError
from .subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "replace_pattern", "has_side_effect", "map_arg",
           "PH", "TraceError"]


def __getattr__(name: str) -> Any:
    if name in ("passes", "subgraph_rewriter", "node", "graph", "proxy", "interpreter",
                "graph_module"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
