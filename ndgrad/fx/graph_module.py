"""``GraphModule`` (``torch.fx.GraphModule``): an nn.Module whose ``forward`` is the Python
code generated from a Graph. It holds the submodules, parameters and buffers the graph's
``call_module``/``get_attr`` nodes name (copied by reference from the root); ``recompile()``
regenerates ``forward`` after the graph was edited.

Example:
    >>> import ndgrad, ndgrad.fx as fx
    >>> gm = fx.symbolic_trace(ndgrad.nn.Sequential(ndgrad.nn.Linear(2, 2), ndgrad.nn.ReLU()))
    >>> gm(ndgrad.ones(1, 2)).shape
    ndgrad.Size([1, 2])
    >>> print(gm.code.strip())
    def forward(self, input):
        input_1 = input
        _0 = getattr(self, "0")(input_1);  input_1 = None
        _1 = getattr(self, "1")(_0);  _0 = None
        return _1
"""

from __future__ import annotations

import itertools
import linecache
from typing import Any, Dict, Union

from .. import nn
from ..tensor import Tensor
from .graph import Graph

__all__ = ["GraphModule"]

_counter = itertools.count()


def _copy_attr(from_module: nn.Module, to_module: nn.Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = nn.Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, nn.Parameter):
        # tensors the graph reads are buffers of the GraphModule (as torch's)
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: nn.Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = nn.Module()
            setattr(to_module, item, t)
        to_module = t
    setattr(to_module, field, from_obj)


class GraphModule(nn.Module):
    """An nn.Module running a Graph (see the module docstring)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> "GraphModule":
        # every instance gets its own class: ``forward`` is set on the class, and the class
        # carries the traced module's name (as torch's do)
        for t in cls.__mro__:
            if t.__qualname__ == "GraphModule.__new__.<locals>.GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # type: ignore[valid-type, misc]
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Union[nn.Module, Dict[str, Any]], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if isinstance(root, nn.Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self.meta: Dict[str, Any] = {}

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        assert isinstance(g, Graph), f"Expected a Graph instance, but got {type(g)}"
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward`` generated from the graph."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> Any:
        """Regenerate ``forward`` from the (edited) graph."""
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        cls = type(self)
        filename = f"<eval_with_key>.{next(_counter)}"
        linecache.cache[filename] = (len(python_code.src), None,
                                     python_code.src.splitlines(True), filename)
        globals_ = dict(python_code.globals)
        exec(compile(python_code.src, filename, "exec"), globals_)
        cls.forward = globals_["forward"]
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False, **_: Any) -> str:
        """``class <name>(torch.nn.Module): def forward ...``: the generated code as a class,
        printed (and returned)."""
        code = self._graph.python_code(root_module="self", verbose=True).src
        lines = code.strip("\n").rstrip().splitlines()
        renamed = sum(1 for n in self._graph.nodes
                      if n.op == "placeholder" and n.name != n.target.lstrip("*"))
        body = ["    " + line for line in lines[:1 + renamed]] + ([""] if renamed else [])
        body.append("        # No stacktrace found for following nodes")
        body += ["    " + line for line in lines[1 + renamed:]]
        out = f"class {type(self).__name__}(torch.nn.Module):\n" + "\n".join(body) + "\n"
        if print_output:
            print(out)
        return out

    def __str__(self) -> str:
        orig = super().__str__()
        return "\n".join([orig, self._code,
                          "# To see more debug info, please use "
                          "`graph_module.print_readable()`"])

    def add_submodule(self, target: str, m: nn.Module) -> bool:
        """Install ``m`` at dotted path ``target`` (creating empty parents)."""
        *prefix, field = target.split(".")
        mod: Any = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = nn.Module()
                setattr(mod, item, sub)
            if not isinstance(sub, nn.Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at dotted path ``target``; False if there is none."""
        *path, name = target.split(".")
        mod: Any = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, nn.Module):
                return False
        if not hasattr(mod, name) or not isinstance(getattr(mod, name), nn.Module):
            return False
        delattr(mod, name)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove submodules no ``call_module``/``get_attr`` node uses."""
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                for i in range(1, len(atoms) + 1):
                    used.add(".".join(atoms[:i]))
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    def __copy__(self) -> "GraphModule":
        res = GraphModule(self, self.graph)
        res.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_graph"})
        return res

    def __deepcopy__(self, memo: Dict[int, Any]) -> "GraphModule":
        import copy
        fake = nn.Module()
        memo[id(self)] = fake
        state = copy.deepcopy({k: v for k, v in self.__dict__.items()
                               if k not in ("_graph", "_code")}, memo)
        fake.__dict__.update(state)
        graph = copy.deepcopy(self._graph, memo)
        res = GraphModule(fake, graph, type(self).__name__)
        res.meta = copy.deepcopy(self.meta, memo)
        return res

    def __reduce_ex__(self, protocol: Any) -> Any:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild, (type(self).__name__, state, self._graph))


def _rebuild(class_name: str, state: Dict[str, Any], graph: Graph) -> GraphModule:
    fake = nn.Module()
    fake.__dict__.update(state)
    return GraphModule(fake, graph, class_name)

