"""Custom differentiable operations: ``Function``, its context ``FunctionCtx`` and
``once_differentiable``.

Note [Custom Functions are ordinary nodes]
Each ``Function`` subclass ``Foo`` gets a node class ``FooBackward`` (a subclass of
``BackwardCFunction``, itself a ``Node``). ``Foo.apply`` creates one instance of it *before*
running the forward, and that instance is the ``ctx`` the forward (or ``setup_context``) sees
and the ``grad_fn`` of the outputs: ``y.grad_fn is ctx``. The node has the usual edges (one per
*tensor* argument; non-tensor arguments have none), input metadata, sequence number and saved
tensors (``autograd/saved.py``), so the engine runs it like any built-in op's node — hooks,
``retain_graph``, shape/dtype validation of the returned gradients, anomaly mode and the
profiler included. Its ``apply`` maps the engine's gradients (one per forward output) to the
user's ``backward`` (one gradient per forward argument) and back to one per edge.

Example:
    >>> import ndgrad
    >>> from ndgrad.autograd import Function
    >>> class Cube(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 3 * x ** 2 * g
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> y = Cube.apply(x)
    >>> y.grad_fn.name()
    'CubeBackward'
    >>> y.sum().backward(); x.grad
    tensor([ 3., 12.])
"""

from __future__ import annotations

import functools
import inspect
import sys
import warnings
from typing import Any, Callable, Optional, TypeVar

from .._sparse_compressed import CompressedTensor
from ..ops import _batching
from ..ops import view as _view
from ..ops._dispatch import _DIFF_DTYPES, _edge
from ..ops.views_inplace import CopySlices, refresh_view
from ..tensor import Tensor, _zeros_meta
from . import anomaly_mode, profiler
from .batching import VMAP as _VMAP
from .grad_mode import _state as _grad_state
from .node import RELEASED, Node, next_sequence_nr
from .saved import SECOND_BACKWARD_MSG, SavedTensor

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable",
           "InplaceFunction"]

F = TypeVar("F", bound=Callable[..., Any])

def _tensors_in(args: tuple) -> tuple:
    return tuple(a for a in args if isinstance(a, Tensor))


class _SavedSlots(tuple):
    """The node's saved tensors. Always truthy, so that the engine releases them after backward
    even when nothing was saved: reading ``ctx.saved_tensors`` after that raises, as in
    PyTorch."""

    def __bool__(self) -> bool:
        return True


class FunctionCtx:
    """The methods ``forward``/``setup_context`` call on ``ctx``.

    ``ctx`` is the backward node itself (see Note [Custom Functions are ordinary nodes]), so
    any attribute set on it (``ctx.k = k``) is available in ``backward``.
    """

    to_save: Optional[tuple] = None
    dirty_tensors: tuple = ()
    non_differentiable: tuple = ()
    materialize_grads = True
    _saved_for_forward: tuple = ()

    def save_for_backward(self, *tensors: Any) -> None:
        """Save tensors (or ``None``) for ``backward``, where ``ctx.saved_tensors`` returns them.
        Saved tensors are checked against later in-place modification and freed after
        backward unless ``retain_graph=True``."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Save tensors for ``jvp`` (forward-mode AD; see ``Function.jvp``)."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise AssertionError("save_for_forward expects all arguments to be tensors; "
                                     "you should save non-tensors as attributes on ctx.")
        self._saved_for_forward = tensors

    def mark_dirty(self, *args: Any) -> None:
        """Declare inputs that ``forward`` modified in place; they must be returned as outputs.
        The returned tensor is the input object itself, its version is bumped and its history
        moves onto this Function's node (for a view, its base's history is rewritten through
        ``CopySlices``; the view must then be the first tensor argument)."""
        self.dirty_tensors = _tensors_in(args) if Tensor is not None else args

    def mark_non_differentiable(self, *args: Any) -> None:
        """Declare outputs that are not differentiable: they do not require grad and
        ``backward`` receives zeros (or ``None``, see ``set_materialize_grads``) for them."""
        self.non_differentiable = _tensors_in(args) if Tensor is not None else args

    def set_materialize_grads(self, value: bool) -> None:
        """With ``True`` (the default) ``backward`` receives zeros for outputs that got no
        gradient; with ``False`` it receives ``None``."""
        self.materialize_grads = bool(value)

    def mark_shared_storage(self, *pairs: Any) -> None:
        """Removed API: always raises (shared storage is tracked
        automatically)."""
        raise RuntimeError("mark_shared_storage is deprecated. Tensors with shared storages are "
                           "automatically tracked. Note that calls to `set_()` are not tracked")


class BackwardCFunction(Node, FunctionCtx):
    """The node class of custom Functions (one subclass per Function, ``FooBackward``)."""

    _forward_cls: Any = None
    needs_input_grad: tuple = ()
    _is_tensor_input: tuple = ()    # per forward argument
    _output_meta: tuple = ()        # per forward output: (shape, dtype) or None (non-tensor)
    _in_jvp = False                 # True while ``jvp`` runs (forward_ad._function_jvp)
    _next_functions: tuple = ()

    def __repr__(self) -> str:     # a Python class in PyTorch too: its module-qualified name
        return f"<{type(self).__module__}.{type(self).__qualname__} object at {hex(id(self))}>"

    @property
    def next_functions(self) -> tuple:  # type: ignore[override]  # read-only, unlike Node's
        """The edges, one per tensor argument (read-only: ``ctx`` holds user attributes)."""
        return self._next_functions

    def apply(self, grads: list) -> tuple:
        """Run the user's ``backward`` on one gradient per forward output; return one gradient
        per edge (tensor argument)."""
        cls = self._forward_cls
        meta = self._output_meta
        if self.materialize_grads and any(g is None for g in grads):
            grads = [_zeros_meta(*m) if g is None and m is not None else g
                     for g, m in zip(grads, meta)]
        user_fn = cls.vjp if cls.vjp is not Function.vjp else cls.backward
        if cls.backward is not Function.backward and cls.vjp is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is "
                               "not allowed. You should only implement one of them.")
        result = user_fn(self, *grads)
        if type(result) is not tuple:
            result = (result,)
        is_tensor = self._is_tensor_input
        n = len(is_tensor)
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(f"function {type(self).__name__} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(result)})")
        out = []
        for i, (g, is_t) in enumerate(zip(result, is_tensor)):
            if is_t:
                if g is not None and not isinstance(g, Tensor):
                    raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
                out.append(g)
            elif g is not None:
                raise RuntimeError(f"function {type(self).__name__} returned a gradient "
                                   f"different than None at position {i + 1}, but the "
                                   "corresponding forward input was not a Variable")
        return tuple(out)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward`` (version-checked when read); inside
        ``jvp``, and in ``forward`` once ``save_for_forward`` was called, those given to it."""
        if self._in_jvp or self._saved_for_forward:
            return tuple(self._saved_for_forward)
        sv = self._saved
        if sv is RELEASED:
            raise RuntimeError(SECOND_BACKWARD_MSG)
        return tuple([_unpack(s, self) if s is not None else None for s in sv])

    @property
    def saved_variables(self) -> tuple:
        """Deprecated alias of ``saved_tensors``; warns."""
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'",
                      DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def release_variables(self) -> None:
        """Free the tensors saved by ``forward``."""
        self._saved = RELEASED


def _unpack(saved: SavedTensor, node: Any) -> Any:
    t = saved.unpack(node)
    if saved._is_output and t._grad_fn is None:
        # A saved output always comes back with its history, as in PyTorch (SavedTensor only
        # rebuilds it while a graph is being recorded).
        out = t._alias()
        out._version_counter = t._version_counter
        _set_history(out, node, saved._output_nr)
        return out
    return t


class Function(FunctionCtx):
    """Base class of custom differentiable operations.

    Subclasses define static methods ``forward(ctx, *args, **kwargs)`` and
    ``backward(ctx, *grad_outputs)`` — or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)`` — and are used through ``Fn.apply(*args)``.
    ``forward`` runs with grad mode off; ``backward`` gets one gradient per output and returns
    one per forward argument (``None`` for non-tensors and inputs that need none), and may use
    ndgrad ops, which makes the Function twice differentiable (``create_graph=True``).
    ``jvp(ctx, *tangents)`` is the forward-mode rule, used under a forward-AD dual level.

    >>> import ndgrad
    >>> from ndgrad.autograd import Function
    >>> class Scale(Function):
    ...     @staticmethod
    ...     def forward(x, k):
    ...         return x * k
    ...     @staticmethod
    ...     def setup_context(ctx, inputs, output):
    ...         ctx.k = inputs[1]
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         return g * ctx.k, None
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> Scale.apply(x, 3.0).sum().backward(); x.grad
    tensor([3., 3.])
    """

    _backward_cls: Any = BackwardCFunction

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(f"{cls.__name__}Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "__module__": __name__})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """The computation (runs with grad mode off)."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        """Optional: fill ``ctx`` from the inputs and output (then ``forward`` takes no ctx)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """The vector-Jacobian product: one gradient per forward argument."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """The Jacobian-vector product: one tangent per output, given one per forward argument.

        Note [Function.jvp slot]
        ``Function.apply`` leaves forward mode to ``autograd/forward_ad.py``: when that module
        has been imported and a dual level is active (its ``_current_level >= 0``), ``apply``
        runs ``forward`` inside ``forward_ad._set_fwd_grad_enabled(False)`` (so the ops of the
        forward propagate no tangents) and then calls
        ``forward_ad._function_jvp(cls, ctx, inputs, outputs)`` after the backward graph is
        recorded (``inputs``: the forward arguments, ``outputs``: the tuple of
        outputs as returned by ``apply``); that function calls ``cls.jvp`` with the inputs'
        tangents and attaches the results to the outputs. Tensors given to
        ``ctx.save_for_forward`` are in ``ctx._saved_for_forward``.
        """
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run the Function on ``args`` and record it for backward."""
        setup = cls.setup_context is not _BASE_SETUP_CONTEXT
        if kwargs or setup:
            args = _bind_args(cls, args, kwargs, setup)
        if _VMAP:       # a vmap level is alive: batched inputs run per entry (func/_vmap.py)
            res = _batching.function_per_entry(cls, args)
            if res is not NotImplemented:
                return res
        prof = profiler._tls.prof if profiler._ACTIVE else None
        if prof is not None:
            with profiler._Range(prof, cls.__name__):
                return _apply(cls, args, setup)
        return _apply(cls, args, setup)


_BASE_SETUP_CONTEXT = Function.setup_context


class InplaceFunction(Function):
    """A Function with an ``inplace`` flag (kept for compatibility with PyTorch)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


_SIGNATURES: dict = {}


def _bind_args(cls: Any, args: tuple, kwargs: dict, setup: bool) -> tuple:
    """Turn keyword arguments into positional ones by the forward's parameter names (the
    backward returns one gradient per position). With ``setup_context`` defaults are filled
    in too, so ``inputs`` holds every argument."""
    key = (cls.forward, setup)
    sig = _SIGNATURES.get(key)
    if sig is None:
        params = list(inspect.signature(cls.forward).parameters.values())
        if not setup:
            params = params[1:]                      # ctx
        positional = [p for p in params
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        sig = _SIGNATURES[key] = (positional, [p.name for p in positional])
    positional, names = sig
    for k in kwargs:
        if k not in names or names.index(k) < len(args):
            if k in names:
                raise TypeError(f"{cls.forward.__qualname__}() got multiple values for "
                                f"argument '{k}'")
            raise TypeError(f"forward() got an unexpected keyword argument '{k}'")
    if not kwargs and not setup:
        return args
    last = max([names.index(k) for k in kwargs] + [len(args) - 1])
    if setup:
        last = max(last, len(names) - 1)
    out = list(args)
    for i in range(len(args), last + 1):
        p = positional[i]
        if p.name in kwargs:
            out.append(kwargs[p.name])
        elif p.default is not p.empty:
            out.append(p.default)
        else:
            raise TypeError(f"{cls.forward.__qualname__}() missing 1 required positional "
                            f"argument: '{p.name}'")
    return tuple(out)


def _apply(cls: Any, args: tuple, setup: bool) -> Any:
    ctx = cls._backward_cls()
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    inputs = [a for a in args if isinstance(a, Tensor)]
    needs = tuple(_requires_grad(a) if t else False for a, t in zip(args, is_tensor))
    executable = _grad_state.enabled and any(needs)
    ctx.needs_input_grad = needs
    ctx._is_tensor_input = is_tensor
    if executable:
        ctx._sequence_nr = next_sequence_nr()
        ctx._next_functions = tuple([_edge(t) for t in inputs])
        ctx._input_meta = tuple([(t._data.shape, t._data.dtype) for t in inputs])
        # a CSR/CSC gradient is refused for a strided input, as torch does (_check_gradient)
        ctx._strided_inputs = frozenset(
            [i for i, t in enumerate(inputs) if not isinstance(t, CompressedTensor)])
        if anomaly_mode._enabled:
            anomaly_mode.record(ctx)
    # local import: forward AD only if its module is loaded (a test replaces it); the same layer
    fa = sys.modules.get("ndgrad.autograd.forward_ad")
    if fa is not None and getattr(fa, "_current_level", -1) < 0:
        fa = None                      # no dual level: no forward AD (Note [Function.jvp slot])
    prev = _grad_state.enabled
    _grad_state.enabled = False
    fw_off = fa._set_fwd_grad_enabled(False) if fa is not None else None
    try:
        if setup:
            raw = cls.forward(*args)
            cls.setup_context(ctx, args, raw)
        else:
            raw = cls.forward(ctx, *args)
    finally:
        _grad_state.enabled = prev
        if fw_off is not None:
            fw_off.__exit__()
    is_tuple = isinstance(raw, tuple)
    outputs = _process_outputs(ctx, inputs, raw if is_tuple else (raw,), executable)
    if fa is not None:
        fa._function_jvp(cls, ctx, args, outputs)
    if ctx.dirty_tensors or ctx.non_differentiable:
        ctx.dirty_tensors = ctx.non_differentiable = ()     # no node -> output cycles
    if ctx._saved_for_forward:
        ctx._saved_for_forward = ()     # only jvp (above) needs them; no node -> output cycle
    return outputs if is_tuple else outputs[0]


def _requires_grad(t: Any) -> bool:
    # A view's requires_grad may need refreshing (ops/views_inplace.py): use the property.
    return t._requires_grad if t._base is None else t.requires_grad


def _process_outputs(ctx: Any, inputs: list, raw: tuple, executable: bool) -> tuple:
    """Attach the outputs to ``ctx`` (Note [Custom Functions are ordinary nodes]), then save
    what ``save_for_backward`` was given."""
    input_ids = {id(t) for t in inputs}
    dirty = {id(t) for t in ctx.dirty_tensors}
    non_diff = {id(t) for t in ctx.non_differentiable}
    if dirty:
        out_ids = {id(o) for o in raw if isinstance(o, Tensor)}
        if not dirty <= out_ids:
            raise RuntimeError("Some elements marked as dirty during the forward method were "
                               "not returned as output. The inputs that are modified inplace "
                               "must all be outputs of the Function.")
    n_tensor_outputs = sum(1 for o in raw if isinstance(o, Tensor))
    results = []
    meta: list = []
    for i, o in enumerate(raw):
        if not isinstance(o, Tensor):
            results.append(o)
            meta.append(None)
            continue
        meta.append((o._data.shape, o._data.dtype))
        oid = id(o)
        is_input = oid in input_ids
        is_dirty = oid in dirty
        if is_dirty:
            o._bump_version()
        differentiable = (executable and oid not in non_diff
                          and o._data.dtype in _DIFF_DTYPES)
        if not differentiable:
            if not _requires_grad(o):
                if is_input and not is_dirty:
                    o = _alias_view(o)
            elif is_input:
                o = o.detach()
            elif o._base is None:
                o.detach_()
        elif is_dirty:
            if o._grad_fn is None and o._requires_grad and o._base is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
            if o._base is not None:
                if n_tensor_outputs > 1:
                    raise RuntimeError(
                        "If your Function modifies inplace an input that is a view of another "
                        "Tensor, your Function cannot return more than one Tensor. This is not "
                        "supported by the current autograd engine. You should either make sure "
                        "the input is not a view (using .clone() for example) or make your "
                        "Function only return one Tensor (potentially splitting it into two "
                        "Functions: one doing the inplace that returns a single Tensor and a "
                        "second one that does the other operations).")
                _rebase_view(o, ctx, inputs)
            else:
                _set_history(o, ctx, i)
        else:
            if is_input:
                o = _alias_view(o)
            _set_history(o, ctx, i)
        results.append(o)
    ctx._num_inputs = len(raw)
    ctx._output_meta = tuple(meta)
    to_save = ctx.to_save
    if executable:
        saved = _SavedSlots()
        if to_save:
            pos = {id(o): i for i, o in enumerate(results)
                   if isinstance(o, Tensor) and o._grad_fn is ctx}
            saved = _SavedSlots([
                None if t is None else
                SavedTensor(t, True, pos[id(t)]) if id(t) in pos else SavedTensor(t)
                for t in to_save])
        ctx._saved = saved
    ctx.to_save = None
    return tuple(results)


def _rebase_view(view: Any, ctx: Any, inputs: list) -> None:
    """A dirty input that is a view: its base's history is rewritten through ``CopySlices``
    (Note [Views and in-place operations] in ops/views_inplace.py), which runs ``ctx`` on the
    view's region of the base's gradient. CopySlices routes the base's gradient through the
    node's first edge, so the view must be the first tensor argument."""
    if inputs[0] is not view:
        raise RuntimeError("ndgrad supports ctx.mark_dirty() on a view only when the view is the "
                           "Function's first tensor argument; clone() it before the call.")
    base = view._base
    if base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    base_edge = _edge(base)
    base._grad_fn = CopySlices(base_edge, (base._data.shape, base._data.dtype),
                               view._view_steps, ctx)
    base._requires_grad = True
    base._output_nr = 0
    refresh_view(view)           # the view's history now comes from the rebased base


def _set_history(t: Any, ctx: Any, output_nr: int) -> None:
    t._grad_fn = ctx
    t._output_nr = output_nr
    t._requires_grad = True


def _alias_view(t: Any) -> Any:
    """``t.view_as(t)`` made in no-grad mode: a new tensor object sharing ``t``'s memory and
    version counter (an input returned as-is gets its own history)."""
    prev = _grad_state.enabled
    _grad_state.enabled = False
    try:
        return _view(t, t._data.shape)
    finally:
        _grad_state.enabled = prev


# ---------------------------------------------------------------------------- once_differentiable
class _DelayedErrorNode(Node):
    """Raises when differentiated: the grad_fn of what a ``once_differentiable`` backward
    returns under ``create_graph=True``."""

    _full_name = "torch::autograd::Error"

    def __init__(self, msg: str, edges: tuple, meta: tuple) -> None:
        self._msg = msg
        self._sequence_nr = next_sequence_nr()
        self.next_functions = edges
        self._input_meta = meta

    def apply(self, grads: list) -> tuple:
        raise RuntimeError(self._msg)


_DelayedErrorNode.__name__ = _DelayedErrorNode.__qualname__ = "Error"

ONCE_DIFFERENTIABLE_MSG = ("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def once_differentiable(fn: F) -> F:
    """Decorate a ``backward`` that is not itself differentiable: it runs with grad mode off,
    and under ``create_graph=True`` its results raise if differentiated again.

    >>> import ndgrad
    >>> from ndgrad.autograd.function import Function, once_differentiable
    >>> class Square(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     @once_differentiable
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> x = ndgrad.tensor([3.0], requires_grad=True)
    >>> Square.apply(x).backward(); x.grad
    tensor([6.])
    """

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        prev = _grad_state.enabled
        _grad_state.enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            _grad_state.enabled = prev
        if not prev:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        # Stand-ins: each output becomes a leaf that requires grad, routed through a node that
        # raises when the engine reaches it.
        leaves = []
        for o in outs:
            if isinstance(o, Tensor):
                leaf = o.detach()
                leaf._requires_grad = True
                leaves.append(leaf)
        node = _DelayedErrorNode(ONCE_DIFFERENTIABLE_MSG, tuple(_edge(t) for t in leaves),
                                 tuple((t._data.shape, t._data.dtype) for t in leaves))
        node._num_inputs = len(leaves)
        wrapped = []
        k = 0
        for o in outs:
            if isinstance(o, Tensor):
                r = leaves[k].detach()
                _set_history(r, node, k)
                k += 1
                wrapped.append(r)
            else:
                wrapped.append(o)
        return wrapped[0] if single else tuple(wrapped)

    return wrapper  # type: ignore[return-value]
