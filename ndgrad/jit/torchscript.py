"""TorchScript's Python API (``torch.jit.script``, ``trace`` of modules, ``save``/``load``,
``ignore``, ``fork`` ...) for the programs that call it.

Note [Scripting runs Python]
ndgrad has no TorchScript compiler: ``script`` keeps Python's semantics (data-dependent
control flow, any Python the function calls) and returns objects of TorchScript's types so
code that checks for them, calls ``.code``, freezes or saves them runs. A scripted module is a
``ScriptModule`` sharing the original's parameters and buffers (the same tensors) with its own
``training`` flag and wrapped submodules, as torch's ``RecursiveScriptModule``; its class
derives from the original's too (so ``super()`` calls, class attributes and helper methods
work; torch's is not an instance of the original class), and its calls run that ``forward``
eagerly.
A module given to ``trace`` becomes a ``TracedModule`` whose calls run ``ndgrad.compile``'s
code (one specialization per kind of input and per tuple of ``training`` flags, Note
[Compiled modules and training flags] in nn/compiled.py), so unlike ``ndgrad.jit.trace`` of a
function it accepts other batch sizes, as torch's traced modules do. ``save`` pickles the
module (``load`` needs its class importable, as ``torch.load`` of a whole module does).

Example:
    >>> import ndgrad
    >>> lin = ndgrad.nn.Linear(2, 2)
    >>> s = ndgrad.jit.script(lin)
    >>> type(s).__name__, s.weight is lin.weight, s.original_name
    ('RecursiveScriptModule', True, 'Linear')
    >>> ndgrad.jit.is_scripting()
    False
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import textwrap
import typing
from typing import Any, Callable, Dict, Iterator

from .. import serialization
from .._control_flow import Future, fork, wait  # torch.jit's are torch's top-level ones
from ..nn.compiled import LazyCompiledCall
from ..nn.modules.module import Module, note_traced_call
from ..ops import _dispatch
from . import api
from .tracer import TracerWarning, freezing_values

__all__ = ["script", "trace", "trace_module", "ScriptModule", "RecursiveScriptModule",
           "ScriptFunction", "TracedModule", "TopLevelTracedModule", "save", "load", "ignore",
           "unused", "export", "is_scripting", "is_tracing", "annotate", "Final", "Attribute",
           "fork", "wait", "Future", "freeze", "optimize_for_inference", "interface",
           "script_method", "script_if_tracing", "Error", "TracerWarning", "TracingCheckError",
           "optimized_execution", "set_fusion_strategy", "enable_onednn_fusion",
           "onednn_fusion_enabled", "strict_fusion", "fuser", "isinstance"]

Error = RuntimeError
Final = typing.Final




class TracingCheckError(Exception):
    """torch.jit's error type for a trace whose check run disagreed."""


def _source(fn: Callable) -> str:
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return ""


# ---------------------------------------------------------------------------- functions
class ScriptFunction:
    """What ``script(function)`` returns: calls run the function (Note [Scripting runs
    Python]); ``.code`` is its source, ``.name`` its name."""

    def __init__(self, fn: Callable) -> None:
        self._fn = fn
        self.name = getattr(fn, "__name__", "function")
        self.__wrapped__ = fn
        self.__name__ = self.name
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    @property
    def code(self) -> str:
        return _source(self._fn)

    def __repr__(self) -> str:
        return f"<ndgrad.jit.ScriptFunction object {self.name}>"


# ---------------------------------------------------------------------------- modules
class ScriptModule(Module):
    """TorchScript's module type. A scripted or traced module is an instance of a class made
    from this one and the original's class (so the original's methods, ``super()`` calls and
    class attributes work), whose instance shares the original's parameters and buffers (the
    same tensors) and has its own ``training`` flag and wrapped submodules (Note [Scripting runs
    Python])."""

    @property
    def original_name(self) -> str:
        return self.__dict__["_original_class"].__name__

    @property
    def code(self) -> str:
        return _source(self.__dict__["_original_class"].forward)

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"

    def _get_name(self) -> str:
        # torch prints a traced module and its submodules by their original class names, a
        # scripted one as RecursiveScriptModule
        if self.__dict__.get("_in_trace"):
            return self.original_name
        return type(self).__name__

    __repr__ = Module.__repr__          # not the original class's own (Sequential, ModuleList)

    def save(self, f: Any, **kwargs: Any) -> None:
        """``ndgrad.jit.save(self, f)`` (without its deprecation warning, as torch's method)."""
        serialization.save(self, f)

    def __reduce_ex__(self, protocol: Any) -> Any:
        kind = next(k for k in type(self).__mro__ if k in _KINDS)
        state = dict(self.__dict__)
        state.pop("_traced", None)      # generated code: traced again from the module
        state.pop("_guarded", None)
        return (_rebuild, (kind, state["_original_class"], state))


class RecursiveScriptModule(ScriptModule):
    """What ``script(module)`` returns (through a class made with the original's)."""


class TracedModule(ScriptModule):
    """What ``trace(module, example_inputs)`` returns: calls run compiled code of the module's
    ``forward`` (Note [Scripting runs Python]); ``.graph`` and ``.code`` are the example
    trace's."""

    def _eager_forward(self, *args: Any, **kwargs: Any) -> Any:
        if _dispatch._TRACING:
            note_traced_call(self)      # its own training flag guards the compiled code
        return super(ScriptModule, self).forward(*args, **kwargs)   # the original class's

    def _start(self, example_inputs: Any, check_trace: bool, strict: bool = False) -> None:
        d = self.__dict__
        # one wrapper for both: the other kinds' traces replay the example's frozen values
        fn = freezing_values(self._eager_forward)
        d["_guarded"] = LazyCompiledCall(self, fn, {})
        if example_inputs is not None:
            d["_traced"] = api.trace(_strict_outputs(fn) if strict else fn, example_inputs,
                                     check_trace=check_trace)

    @property
    def graph(self) -> Any:
        return self.__dict__["_traced"].graph

    @property
    def code(self) -> str:
        return self.__dict__["_traced"].code

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        traced = self.__dict__.get("_traced")
        if traced is not None and not kwargs:
            # inputs of the example's kind run the example's trace, with the values it froze
            # (Note [Frozen values in torch.jit.trace]); other kinds are traced again
            out = traced.run_if_traced_for(args)
            if out is not NotImplemented:
                return out
        guarded = self.__dict__.get("_guarded")
        if guarded is None:                          # unpickled: compile again
            self._start(None, False)
            guarded = self.__dict__["_guarded"]
        return guarded(*args, **kwargs)


class TopLevelTracedModule(TracedModule):
    """What ``trace(module, ...)`` returns at the top level."""


_KINDS = (RecursiveScriptModule, TopLevelTracedModule, TracedModule)
_CLASSES: Dict[tuple, type] = {}


def _class_for(kind: type, cls: type) -> type:
    """``kind`` combined with the original module class ``cls`` (named as ``kind``)."""
    made = _CLASSES.get((kind, cls))
    if made is None:
        made = _CLASSES[(kind, cls)] = type(kind.__name__, (kind, cls),
                                             {"__module__": kind.__module__,
                                              "__qualname__": kind.__qualname__})
    return made


def _wrap(kind: type, mod: Module, in_trace: bool = False) -> Module:
    """A new module of ``_class_for(kind, type(mod))`` sharing ``mod``'s tensors, with its own
    flag and its submodules wrapped as ``RecursiveScriptModule``s (traced modules too: the
    compiled call runs the whole tree; ``in_trace`` only names them as torch prints them)."""
    if builtins.isinstance(mod, ScriptModule):
        mod = mod.__dict__["_original"]
    in_trace = in_trace or kind is TopLevelTracedModule
    state = dict(mod.__dict__)
    state.pop("_compiled_call_impl", None)    # module.compile()'s call runs the original
    state["_modules"] = {k: None if c is None else _wrap(RecursiveScriptModule, c,
                                                         _child_in_trace(c, in_trace))
                         for k, c in mod._modules.items()}
    state["_original"] = mod
    state["_in_trace"] = in_trace
    return _rebuild(kind, type(mod), state)


def _child_in_trace(child: Module, in_trace: bool) -> bool:
    """Is ``child`` printed as a traced module's submodule? An already scripted or traced
    child keeps its own names."""
    if builtins.isinstance(child, ScriptModule):
        return bool(child.__dict__.get("_in_trace"))
    return in_trace


def _rebuild(kind: type, cls: type, state: dict) -> Module:
    obj: Any = object.__new__(_class_for(kind, cls))
    obj.__dict__.update(state)
    obj.__dict__["_original_class"] = cls
    return obj


# ---------------------------------------------------------------------------- entry points
def _deprecated(name: str, instead: str) -> None:
    """torch 2.13's DeprecationWarning for ``torch.jit.<name>``."""
    import warnings
    warnings.warn(f"`torch.jit.{name}` is deprecated. Please {instead}.", DeprecationWarning,
                  stacklevel=3)


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """``torch.jit.script``: a module becomes a ``RecursiveScriptModule``, a function a
    ``ScriptFunction``; classes, enums and already-scripted objects are returned as they are
    (Note [Scripting runs Python]).

    >>> import ndgrad
    >>> @ndgrad.jit.script
    ... def f(x: ndgrad.Tensor) -> ndgrad.Tensor:
    ...     return x * 2 if bool(x.sum() > 0) else -x
    >>> f(ndgrad.tensor([1.0])), type(f).__name__
    (tensor([2.]), 'ScriptFunction')
    """
    _deprecated("script", "switch to `torch.compile` or `torch.export`")
    if builtins.isinstance(obj, (ScriptModule, ScriptFunction)) or inspect.isclass(obj):
        return obj
    if builtins.isinstance(obj, Module):
        return _wrap(RecursiveScriptModule, obj)
    if callable(obj):
        code = getattr(obj, "__code__", None)
        if code is not None and getattr(obj, "__name__", "") == "<lambda>":
            # torch parses the source line of the function: a lambda is never one
            raise RuntimeError(f"Expected a single top-level function: {code.co_filename}:"
                               f"{code.co_firstlineno}")
        return ScriptFunction(obj)
    raise RuntimeError(f"ndgrad.jit.script: cannot script an object of type "
                       f"{type(obj).__name__}")


def trace(func: Any, example_inputs: Any = None, optimize: Any = None,
          check_trace: bool = True, check_inputs: Any = None, check_tolerance: float = 1e-5,
          strict: bool = True, _force_outplace: bool = False,
          _module_class: Any = None, _compilation_unit: Any = None,
          example_kwarg_inputs: Any = None, _store_inputs: bool = True) -> Any:
    """``torch.jit.trace``: a module becomes a ``TopLevelTracedModule`` (Note [Scripting runs
    Python]) whose Python reads of traced values are frozen with torch's TracerWarning (Note
    [Frozen values in torch.jit.trace]); a function is traced by seed 004's graph path
    (``jit.api.trace``), where such a read raises ``TraceError`` naming the line: a graph that
    silently keeps the example's branch is what the graph path refuses (issue 11's contract,
    one of the differences in docs/differences.md).

    >>> import ndgrad
    >>> lin = ndgrad.nn.Linear(3, 2)
    >>> t = ndgrad.jit.trace(lin, ndgrad.ones(4, 3))
    >>> type(t).__name__, t(ndgrad.ones(6, 3)).shape
    ('TopLevelTracedModule', ndgrad.Size([6, 2]))
    """
    if example_inputs is None and example_kwarg_inputs is not None:
        raise NotImplementedError("ndgrad.jit.trace: example_kwarg_inputs is not supported; "
                                  "pass the inputs positionally")
    if builtins.isinstance(func, Module):   # TorchScript's deployment path: its deprecation
        _deprecated("trace", "switch to `torch.compile` or `torch.export`")
        return _traced(func, example_inputs, check_trace, strict)
    return api.trace(_strict_outputs(func) if strict else func, example_inputs,
                     check_trace=check_trace)


_DICT_OUTPUT = (
    "Encountering a dict at the output of the tracer might cause the trace to be incorrect, "
    "this is only valid if the container structure does not change based on the module's "
    "inputs. Consider using a constant container instead (e.g. for `list`, use a `tuple` "
    "instead. for `dict`, use a `NamedTuple` instead). If you absolutely need this and know "
    "the side effects, pass strict=False to trace() to allow this behavior.")


def _strict_outputs(fn: Callable) -> Callable:
    """``fn`` refusing a dict among its outputs, as ``trace(..., strict=True)``."""
    def has_dict(v: Any) -> bool:
        if builtins.isinstance(v, dict):
            return True
        return builtins.isinstance(v, (tuple, list)) and any(has_dict(x) for x in v)

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if has_dict(out):
            raise RuntimeError(_DICT_OUTPUT)
        return out
    return run


def trace_module(mod: Module, inputs: Dict[str, Any], **kwargs: Any) -> Any:
    """``torch.jit.trace_module``: traces ``forward`` with ``inputs["forward"]``."""
    if "forward" not in inputs:
        raise NotImplementedError("ndgrad.jit.trace_module traces the 'forward' method only")
    return _traced(mod, inputs["forward"], kwargs.get("check_trace", True),
                   kwargs.get("strict", True))


def _traced(mod: Module, example_inputs: Any, check_trace: bool, strict: bool = True) -> Any:
    t = _wrap(TopLevelTracedModule, mod)
    t._start(example_inputs, check_trace, strict)
    return t


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """``torch.jit.save``: pickles the scripted or traced module (Note [Scripting runs
    Python])."""
    _deprecated("save", "switch to `torch.export`")
    if not builtins.isinstance(m, (ScriptModule, ScriptFunction)):
        raise AttributeError(f"'{type(m).__name__}' object has no attribute 'save'")
    serialization.save(m, f)


def load(f: Any, map_location: Any = None, _extra_files: Any = None) -> Any:
    """``torch.jit.load``: what ``save`` wrote. The classes of the saved modules must be
    importable here (Note [Scripting runs Python]): torch's archives carry their code, ndgrad's
    name it."""
    _deprecated("load", "switch to `torch.export`")
    try:
        return serialization.load(f, map_location=map_location, weights_only=False)
    except (AttributeError, ImportError) as e:      # pickle's "Can't get attribute ..."
        if isinstance(e, ImportError) and (e.name or "").startswith("__torch__"):
            raise RuntimeError(
                "ndgrad.jit.load: this is a TorchScript archive written by torch.jit.save; "
                "ndgrad does not run TorchScript code. Save the model's state_dict with "
                "torch.save and load it into the Python model") from None
        raise RuntimeError(
            f"ndgrad.jit.load: {e}. ndgrad saves a scripted or traced module as a pickle that "
            "names its Python class, so the code defining it must be importable where it is "
            "loaded (unlike TorchScript archives, which carry their code): import or define "
            "the class first, or save the state_dict and rebuild the module") from None


def freeze(mod: Any, preserved_attrs: Any = None, optimize_numerics: bool = True) -> Any:
    """``torch.jit.freeze``: checks torch's preconditions and returns the module."""
    _deprecated("freeze", "use `torch.compile` instead")
    if not builtins.isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod


def optimize_for_inference(mod: Any, other_methods: Any = None) -> Any:
    """``torch.jit.optimize_for_inference``: freezes a module (scripting it first)."""
    if not builtins.isinstance(mod, ScriptModule):
        mod = script(mod)
    if mod.training:
        mod.eval()
    return freeze(mod)


# ---------------------------------------------------------------------------- decorators
def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@torch.jit.ignore`` (with or without arguments): the function unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: Callable) -> Callable:
    """``@torch.jit.unused``: the function unchanged."""
    return fn


def export(fn: Callable) -> Callable:
    """``@torch.jit.export``: the function unchanged."""
    return fn


def script_method(fn: Callable) -> Callable:
    """``@torch.jit.script_method``: the function unchanged."""
    return fn


def interface(obj: Any) -> Any:
    """``@torch.jit.interface``: the class unchanged."""
    return obj


def script_if_tracing(fn: Callable) -> Callable:
    """``@torch.jit.script_if_tracing``: the function unchanged."""
    return fn


def annotate(the_type: Any, the_value: Any) -> Any:
    """``torch.jit.annotate``: the value."""
    return the_value


def Attribute(value: Any, type: Any) -> Any:  # noqa: N802  (torch's name)
    """``torch.jit.Attribute``: the value (outside a TorchScript compiler)."""
    return value


def is_scripting() -> bool:
    """False: ndgrad never compiles TorchScript."""
    return False


def is_tracing() -> bool:
    """True while ``ndgrad.jit.trace``/``ndgrad.compile`` records a trace."""
    return bool(_dispatch._TRACING)


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001  (torch's name)
    """``torch.jit.isinstance``: ``isinstance`` that understands ``List[int]``,
    ``Dict[str, Tensor]``, ``Optional[...]``, ``Tuple[...]`` (containers checked element by
    element; as in TorchScript, ``Tuple[int, ...]`` is a tuple of one int and one ``...``).

    >>> import ndgrad
    >>> from typing import List
    >>> ndgrad.jit.isinstance([1, 2], List[int]), ndgrad.jit.isinstance([1, "a"], List[int])
    (True, False)
    """
    return _check(obj, target_type)


def _check(obj: Any, t: Any) -> bool:
    origin = typing.get_origin(t)
    if origin is None:
        return t is Any or builtins.isinstance(obj, t)
    args = typing.get_args(t)
    if origin is typing.Union:
        return any(_check(obj, a) for a in args)
    if origin is list:
        return builtins.isinstance(obj, list) and all(_check(x, args[0]) for x in obj)
    if origin is dict:
        return builtins.isinstance(obj, dict) and all(
            _check(k, args[0]) and _check(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        if not builtins.isinstance(obj, tuple):
            return False
        return len(obj) == len(args) and all(_check(x, a) for x, a in zip(obj, args))
    return builtins.isinstance(obj, origin)


# ---------------------------------------------------------------------------- fuser settings
_FUSION = [[("STATIC", 2), ("DYNAMIC", 10)]]
_ONEDNN = [False]


def set_fusion_strategy(strategy: Any) -> Any:
    """Stores and returns the previous strategy (ndgrad's fusion is the numba tier's)."""
    old, _FUSION[0] = _FUSION[0], list(strategy)
    return old


def enable_onednn_fusion(enabled: bool) -> None:
    _ONEDNN[0] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    return _ONEDNN[0]


@contextlib.contextmanager
def optimized_execution(should_optimize: bool) -> Iterator[None]:
    """A context manager without effect (torch's executor switch)."""
    yield


@contextlib.contextmanager
def fuser(name: str) -> Iterator[None]:
    """A context manager without effect (torch's fuser choice)."""
    yield


class strict_fusion:  # noqa: N801  (torch's name)
    """A context manager without effect (torch's fusion assertion)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
