"""The machinery of the ``__torch_function__`` protocol (the public names are in
``ndgrad.overrides`` and ``ndgrad._C``).

Note [Torch function protocol]
A call of a public function or Tensor method whose arguments include an object of a type that
defines ``__torch_function__`` (a Tensor subclass, or any tensor-like class) is handed to that
method instead of running: ``cls.__torch_function__(func, types, args, kwargs)``, where
``func`` is the public callable (``ndgrad.sin``, ``Tensor.sum``, ``Tensor.__add__``), ``types``
the overriding types and ``args``/``kwargs`` the call's arguments. The overriding arguments are
tried left to right, a subclass before its superclasses; the first result that is not
``NotImplemented`` is the call's result. An active ``TorchFunctionMode`` (a thread's stack of
them) sees every call first, itself popped while its handler runs.

Plain tensors pay nothing for this:
* the checking wrappers (Note [Declared signatures] in ``_signature.py``) look for an
  overriding argument only on their slow path, after the inline ``type(v) is Tensor`` test
  failed; a live mode is one module-global flag per wrapper (``_M``), true only while some
  thread has a mode;
* operators and the methods that are not checking wrappers (``x + y``, ``x[0]``,
  ``x.detach()``) dispatch through functions installed on each overriding subclass when it is
  created (``Tensor.__init_subclass__``), and on ``Tensor`` itself only while a mode is live.

``Tensor.__torch_function__`` (the default) runs the function with subclass dispatch disabled
and turns Tensor results into the subclass (``as_subclass``); ``_disabled_torch_function_impl``
(``nn.Parameter``'s) runs it and returns plain results.

Example:
    >>> import ndgrad
    >>> class Tagged(ndgrad.Tensor):
    ...     pass
    >>> t = ndgrad.ones(2).as_subclass(Tagged)
    >>> type(t + 1).__name__, type(ndgrad.sin(t)).__name__, type(t.sum()).__name__
    ('Tagged', 'Tagged', 'Tagged')
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Iterable, Optional

from .tensor import Tensor

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass", "TorchFunctionMode",
           "_disabled_torch_function_impl", "handle_torch_function", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "is_tensor_like",
           "is_torch_function_enabled", "is_torch_function_mode_enabled"]


class _State(threading.local):
    def __init__(self) -> None:
        self.modes: list = []           # innermost last
        self.subclass_off = False       # DisableTorchFunctionSubclass (and the default's run)
        self.all_off = False            # DisableTorchFunction (modes too)


_state = _State()
_lock = threading.Lock()
_live = [0]                             # modes pushed, in all threads
_ENVS: list = []                        # the checking wrappers' globals (their ``_M`` flag)


def register_env(env: dict) -> None:
    """A checking wrapper's globals, whose ``_M`` says whether some mode may be active."""
    env["_M"] = _live[0] > 0
    _ENVS.append(env)


# ---------------------------------------------------------------------------- disabling
class _DisabledImpl:
    """``__torch_function__ = _disabled_torch_function_impl``: run the function with subclass
    dispatch disabled and return its result unchanged (plain tensors). Not a method: it binds
    to neither the class nor the instance."""

    __name__ = __qualname__ = "_disabled_torch_function_impl"

    def __call__(self, func: Callable, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    def __repr__(self) -> str:
        return "<built-in function _disabled_torch_function_impl>"


_disabled_torch_function_impl = _DisabledImpl()


class DisableTorchFunctionSubclass:
    """Context manager: inside, no subclass or tensor-like ``__torch_function__`` is called
    (modes still are).

    >>> import ndgrad
    >>> from ndgrad._C import DisableTorchFunctionSubclass
    >>> class Tagged(ndgrad.Tensor):
    ...     pass
    >>> with DisableTorchFunctionSubclass():
    ...     type(ndgrad.ones(1).as_subclass(Tagged) * 2).__name__
    'Tensor'
    """

    def __enter__(self) -> None:
        self._prev = _state.subclass_off
        _state.subclass_off = True

    def __exit__(self, *exc: Any) -> None:
        _state.subclass_off = self._prev


class DisableTorchFunction:
    """Context manager: inside, neither modes nor subclasses' ``__torch_function__`` run.

    >>> import ndgrad
    >>> from ndgrad._C import DisableTorchFunction
    >>> with DisableTorchFunction():
    ...     ndgrad._C._is_torch_function_enabled()
    False
    """

    def __enter__(self) -> None:
        self._prev = (_state.subclass_off, _state.all_off)
        _state.subclass_off = _state.all_off = True

    def __exit__(self, *exc: Any) -> None:
        _state.subclass_off, _state.all_off = self._prev


def is_torch_function_enabled() -> bool:
    """False inside ``DisableTorchFunction`` or ``DisableTorchFunctionSubclass``."""
    return not _state.subclass_off


def is_torch_function_mode_enabled() -> bool:
    """Whether this thread has an active ``TorchFunctionMode`` that is not disabled."""
    return bool(_state.modes) and not _state.all_off


# ---------------------------------------------------------------------------- overriding types
_OVERRIDES: dict = {}
# The types seen not to override (Parameter, numbers, NumPy scalars ...): one set lookup
# settles them on the wrappers' slow path (lists and tuples are never in it).
PLAIN: set = {Tensor, int, float, bool, complex, str, type(None)}
# The Tensor subclasses among them (Parameter ...): the wrappers' inline test admits them.
PLAIN_TENSORS: set = {Tensor}


def _overrides(t: type) -> bool:
    """Whether objects of type ``t`` take part in dispatch (their ``__torch_function__`` is
    neither missing nor the disabled one; plain Tensor never does)."""
    r = _OVERRIDES.get(t)
    if r is None:
        if t is Tensor:
            r = False
        else:
            tf = getattr(t, "__torch_function__", None)
            r = tf is not None and tf is not _disabled_torch_function_impl
        _OVERRIDES[t] = r
        if not r and t is not list and t is not tuple:
            PLAIN.add(t)
            if issubclass(t, Tensor):
                PLAIN_TENSORS.add(t)
    return r


def wants(v: Any) -> bool:
    """An argument that turns a call into a dispatch (the wrappers' slow path)."""
    t = type(v)
    return t not in PLAIN and _overrides(t) and not _state.subclass_off


def wants_seq(v: Any) -> bool:
    """A tensor-list argument one of whose elements overrides."""
    if not isinstance(v, (tuple, list)):
        return False
    for x in v:
        t = type(x)
        if t not in PLAIN and _overrides(t):
            return not _state.subclass_off
    return False


def mode_active() -> bool:
    return bool(_state.modes) and not _state.all_off


def _collect(values: Iterable, out: list, plain: bool = False) -> None:
    """Append the overriding objects among ``values`` (and one level inside lists and tuples)
    to ``out``: one per type, a subclass before its superclasses, else left to right. ``plain``:
    plain tensors count too (as for ``handle_torch_function``, where Tensor's default then
    declines for a subclass's call)."""
    for v in values:
        t = type(v)
        if t is Tensor and not plain:
            continue
        if t is list or t is tuple:
            _collect(v, out, plain)
            continue
        if not (_overrides(t) or t is Tensor) or any(type(o) is t for o in out):
            continue
        for i, o in enumerate(out):
            if issubclass(t, type(o)):
                out.insert(i, v)
                break
        else:
            out.append(v)


def overloaded(args: Iterable, kwargs: Optional[dict], plain: bool = False) -> list:
    """The overriding objects among a call's arguments, in the order they are tried."""
    out: list = []
    if _state.subclass_off:
        return out
    _collect(args, out, plain)
    if kwargs:
        _collect(kwargs.values(), out, plain)
    return out


class _NoImplementation(TypeError):
    """Every handler returned NotImplemented (an operator then returns NotImplemented); shown
    as the TypeError it is."""


_NoImplementation.__name__ = _NoImplementation.__qualname__ = "TypeError"
_NoImplementation.__module__ = "builtins"


def _name(func: Any) -> str:
    name = getattr(func, "_tf_name", None)
    if name is None:
        qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
        name = f"{getattr(func, '__module__', None) or 'ndgrad'}.{qual}"
    return name


def dispatch(func: Any, overloaded: list, args: tuple, kwargs: Optional[dict],
             python_api: bool = False) -> Any:
    """Run ``func``'s call through the innermost mode, then the overriding arguments."""
    types = tuple(type(o) for o in overloaded)
    st = _state
    if st.modes and not st.all_off:
        mode = st.modes.pop()
        try:
            r = mode.__torch_function__(func, types, args, kwargs)
        finally:
            st.modes.append(mode)
        if r is not NotImplemented:
            return r
        tried = [f"  - mode object {mode!r}"]
    else:
        tried = []
    for o in overloaded:
        r = o.__torch_function__(func, types, args, kwargs)
        if r is not NotImplemented:
            return r
    if python_api:
        raise _NoImplementation(f"no implementation found for '{_name(func)}' on types that "
                                f"implement __torch_function__: {list(types)}")
    tried += [f"  - tensor subclass {t}" if issubclass(t, Tensor) else f"  - tensor-like {t}"
              for t in types]
    raise _NoImplementation(f"Multiple dispatch failed for '{_name(func)}'; all "
                            "__torch_function__ handlers returned NotImplemented:\n\n"
                            + "\n".join(tried) + "\n")


# ---------------------------------------------------------------------------- the default
def _convert(ret: Any, cls: type) -> Any:
    if isinstance(ret, Tensor):
        return ret if isinstance(ret, cls) else ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        if hasattr(type(ret), "_fields"):
            return type(ret)(*items)
        return type(ret)(items)
    return ret


def _default_torch_function(cls: type, func: Callable, types: Any, args: Any = (),
                            kwargs: Any = None) -> Any:
    """Run ``func`` with subclass dispatch disabled; Tensor results (also inside tuples and
    lists) become ``cls`` unless they already are one. NotImplemented when some overriding
    type is not a superclass of ``cls``."""
    if kwargs is None:
        kwargs = {}
    for t in types:
        if not issubclass(cls, t):
            return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if cls is Tensor:
            return ret
        return _convert(ret, cls)


# ---------------------------------------------------------------------------- operators, methods
# Tensor attributes that are not checking wrappers and dispatch through installed functions.
_SKIP = frozenset({
    "__init__", "__new__", "__init_subclass__", "__torch_function__", "__repr__", "__str__",
    "__format__", "__reduce_ex__", "__reduce__", "__deepcopy__", "__copy__", "__hash__",
    "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__dir__", "__sizeof__",
    "__class_getitem__", "__subclasshook__", "__array__", "__array_ufunc__",
    "__array_function__", "__array_wrap__", "__dlpack__", "__dlpack_device__", "as_subclass",
    "__getstate__", "__setstate__", "__bool__", "__len__", "__iter__", "__contains__",
    "__float__", "__int__", "__index__", "__complex__", "__reversed__"})
_OPERATORS: set = set()          # names whose NotImplemented-everywhere becomes NotImplemented
_RAW: dict = {}
_DISPATCHERS: dict = {}
DISPATCHED_NAMES = _DISPATCHERS.keys()      # (a live view)


def _dispatcher(name: str, raw: Callable) -> Callable:
    operator = name.startswith("__")

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        st = _state
        if (st.modes and not st.all_off) or (not st.subclass_off and (
                _overrides(type(self)) or _any_overrides(args, kwargs))):
            full = (self,) + args
            try:
                return dispatch(getattr(Tensor, name), overloaded(full, kwargs), full,
                                kwargs or None)
            except _NoImplementation:
                if operator:
                    return NotImplemented
                raise
        return raw(self, *args, **kwargs)
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = getattr(raw, "__doc__", None)
    method.__wrapped__ = raw  # type: ignore[attr-defined]
    method._tf_dispatcher = True  # type: ignore[attr-defined]
    method._tf_name = f"ndgrad.Tensor.{name}"  # type: ignore[attr-defined]
    return method


def _property(name: str, raw: property) -> property:
    """A property whose getter takes part in the protocol (``func`` is the getter's
    ``__get__``, as called ``func(tensor)``)."""
    getter = raw.__get__

    def get(self: Any) -> Any:
        st = _state
        if (st.modes and not st.all_off) or (not st.subclass_off and _overrides(type(self))):
            return dispatch(getter, overloaded((self,), None), (self,), None)
        return getter(self)
    return property(get, raw.fset, raw.fdel, raw.__doc__)


PROPERTIES = ("T", "mT", "H", "mH", "real", "imag", "data")


def other_operand(name: str, self: Tensor, other: Any) -> Any:
    """What a Tensor operator returns for an operand it does not take: the protocol's result
    when ``other`` is a tensor-like (``x + tensor_like``), else NotImplemented."""
    if _state.subclass_off or not _overrides(type(other)):
        return NotImplemented
    full = (self, other)
    try:
        return dispatch(getattr(Tensor, name), overloaded(full, None), full, None)
    except _NoImplementation:
        return NotImplemented


def _any_overrides(args: tuple, kwargs: dict) -> bool:
    """Whether an argument (or an element of a list or tuple argument) overrides; the caller
    checks that subclass dispatch is enabled."""
    for v in args:
        t = type(v)
        if t in PLAIN:
            continue
        if t is list or t is tuple:
            if wants_seq(v):
                return True
        elif _overrides(t):
            return True
    if kwargs:
        return _any_overrides(tuple(kwargs.values()), {})
    return False


def build_dispatchers() -> None:
    """The dispatching operators, methods and properties (built once, on first need)."""
    if _DISPATCHERS:
        return
    import types as _types
    for name in dir(Tensor):
        if name in _SKIP or (name.startswith("_") and not name.startswith("__")):
            continue
        raw = Tensor.__dict__.get(name)
        if raw is None:
            for klass in Tensor.__mro__[1:]:
                if name in klass.__dict__:
                    break
            continue
        if not isinstance(raw, _types.FunctionType) or hasattr(raw, "__signature_schema__"):
            continue
        if name.startswith("__") and name not in _TENSOR_OPERATORS:
            continue
        _RAW[name] = raw
        _DISPATCHERS[name] = _dispatcher(name, raw)
    for name in PROPERTIES:
        raw = Tensor.__dict__[name]
        _RAW[name] = raw
        _DISPATCHERS[name] = _property(name, raw)


def name_operators() -> None:
    """Name each operator's function as the operator (what a handler receives for ``x + y``
    is ``Tensor.__add__``, named so)."""
    for name in _TENSOR_OPERATORS:
        raw = Tensor.__dict__.get(name)
        if callable(raw) and sum(v is raw for v in Tensor.__dict__.values()) == 1:
            raw.__name__, raw.__qualname__ = name, f"Tensor.{name}"


_TENSOR_OPERATORS = frozenset(
    f"__{op}__" for base in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                             "and", "or", "xor", "lshift", "rshift", "div")
    for op in (base, "r" + base, "i" + base)) | frozenset(
    {"__neg__", "__pos__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__",
     "__gt__", "__ge__", "__getitem__", "__setitem__"})


def init_subclass(cls: type, **kwargs: Any) -> None:
    """``Tensor.__init_subclass__``: a subclass keeps its class through pickling and deepcopy,
    and an overriding one gets the dispatching operators and methods (those it, its bases and
    mixins do not define)."""
    super(Tensor, cls).__init_subclass__(**kwargs)  # type: ignore[misc]
    mro = cls.__mro__
    below = mro[:mro.index(Tensor)]      # the subclass, its bases and mixins before Tensor
    for name, fn in (("__reduce_ex__", _reduce_ex), ("__deepcopy__", _deepcopy)):
        if not any(name in k.__dict__ for k in below):
            setattr(cls, name, fn)
    if not _overrides(cls):
        return
    build_dispatchers()
    for name, fn in _DISPATCHERS.items():
        if not any(name in k.__dict__ for k in below):
            setattr(cls, name, fn)


def python_functions(namespace: dict, names: Iterable[str], prefix: str = "ndgrad") -> None:
    """Make the functions ``names`` of a module namespace (written in Python, without a
    checking wrapper) take part in the protocol; they scan their arguments on every call."""
    for name in names:
        namespace[name] = _python_function(namespace[name], f"{prefix}.{name}")


def _python_function(raw: Callable, public: str) -> Callable:
    def fn(*args: Any, **kwargs: Any) -> Any:
        if not _live[0]:
            # the usual case: tensors, numbers, strings, lists or tuples of them (``grad(loss,
            # [x], create_graph=True)``): no type that could override
            for v in args:
                t = type(v)
                if t not in PLAIN:
                    if t is list or t is tuple:
                        for e in v:
                            if type(e) not in PLAIN:
                                break
                        else:
                            continue
                    break
            else:
                if not kwargs:
                    return raw(*args)
                for v in kwargs.values():
                    if type(v) not in PLAIN:
                        break
                else:
                    return raw(*args, **kwargs)
        if (_live[0] and mode_active()) or (_any_overrides(args, kwargs) and
                                            not _state.subclass_off):
            return dispatch(fn, overloaded(args, kwargs), args, kwargs or None)
        return raw(*args, **kwargs)
    functools.update_wrapper(fn, raw)
    fn._tf_name = public  # type: ignore[attr-defined]
    return fn


def entry(public: Callable, raw: Optional[Callable] = None) -> Callable:
    """``public``'s implementation (``raw``, by default the one behind its checking wrapper)
    for callers whose arguments are known good (the nn modules): it runs ``raw`` directly
    unless a mode is live or an argument overrides, and then dispatches the call as
    ``public`` itself would (handlers receive ``public``, as torch's modules hand theirs
    ``F.linear``). The usual case costs a scan of the arguments' types."""
    impl: Callable = public.__wrapped__ if raw is None else raw  # type: ignore[attr-defined]

    def fn(*args: Any, **kwargs: Any) -> Any:
        if not _live[0]:
            for v in args:                  # the usual case: tensors, numbers, strings
                if type(v) not in PLAIN:
                    break
            else:
                for v in kwargs.values():
                    if type(v) not in PLAIN:
                        break
                else:
                    return impl(*args, **kwargs)
        if (_live[0] and mode_active()) or (_any_overrides(args, kwargs) and
                                            not _state.subclass_off):
            return dispatch(public, overloaded(args, kwargs), args, kwargs or None)
        return impl(*args, **kwargs)
    functools.update_wrapper(fn, impl)
    return fn


# ---------------------------------------------------------------------------- modes
class TorchFunctionMode:
    """A context manager that sees every public call while it is active (in its thread):
    ``__torch_function__(self, func, types, args=(), kwargs=None)`` returns the call's result.
    While it runs, the mode itself is inactive, so calling ``func(*args, **kwargs)`` goes to the
    next mode out, the subclasses, or the function.

    >>> import ndgrad
    >>> from ndgrad.overrides import TorchFunctionMode
    >>> class Log(TorchFunctionMode):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.names = []
    ...     def __torch_function__(self, func, types, args=(), kwargs=None):
    ...         self.names.append(func.__name__)
    ...         return func(*args, **(kwargs or {}))
    >>> with Log() as log:
    ...     y = ndgrad.ones(2).sin()
    >>> log.names
    ['ones', 'sin']
    """

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func: Callable, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        raise NotImplementedError()

    def __enter__(self) -> "TorchFunctionMode":
        _push(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _pop(self)


def _push(mode: Any) -> None:
    _state.modes.append(mode)
    _set_live(1)


def _pop(mode: Any) -> None:
    modes = _state.modes
    if modes and modes[-1] is mode:
        modes.pop()
    elif mode in modes:
        modes.remove(mode)
    else:
        return
    _set_live(-1)


def _set_live(delta: int) -> None:
    with _lock:
        before = _live[0]
        _live[0] = before + delta
        if (before > 0) == (_live[0] > 0):
            return
        on = _live[0] > 0
        for env in _ENVS:
            env["_M"] = on
        build_dispatchers()
        table = _DISPATCHERS if on else _RAW
        for name, fn in table.items():
            setattr(Tensor, name, fn)


# ---------------------------------------------------------------------------- public helpers
def has_torch_function(relevant_args: Iterable) -> bool:
    """Whether a call with these arguments dispatches: an active mode, or an argument whose
    type overrides ``__torch_function__`` (plain tensors do not).

    >>> import ndgrad
    >>> from ndgrad.overrides import has_torch_function
    >>> has_torch_function((ndgrad.ones(1), 2))
    False
    """
    if _state.all_off:
        return False
    if _state.modes:
        return True
    if _state.subclass_off:
        return False
    return any(type(a) is not Tensor and _overrides(type(a)) for a in relevant_args)


def has_torch_function_unary(obj: Any) -> bool:
    """``has_torch_function((obj,))``."""
    return has_torch_function((obj,))


def has_torch_function_variadic(*args: Any) -> bool:
    """``has_torch_function(args)``."""
    return has_torch_function(args)


def handle_torch_function(public_api: Callable, relevant_args: Iterable, *args: Any,
                          **kwargs: Any) -> Any:
    """Call ``public_api``'s overrides (an active mode, then the overriding objects among
    ``relevant_args``) with ``args``/``kwargs``; used by functions written in Python that take
    part in the protocol.

    >>> import ndgrad
    >>> from ndgrad.overrides import handle_torch_function, has_torch_function
    >>> def double(x):
    ...     if has_torch_function((x,)):
    ...         return handle_torch_function(double, (x,), x)
    ...     return x * 2
    >>> class Tagged(ndgrad.Tensor):
    ...     pass
    >>> type(double(ndgrad.ones(1).as_subclass(Tagged))).__name__
    'Tagged'
    """
    relevant = tuple(relevant_args)
    found = overloaded(relevant, None, plain=True)
    if all(type(o) is Tensor for o in found):
        found = []
    return dispatch(public_api, found, args, kwargs, python_api=True)


def is_tensor_like(inp: Any) -> bool:
    """True for a Tensor and for any object (or class) with a ``__torch_function__``.

    >>> import ndgrad
    >>> from ndgrad.overrides import is_tensor_like
    >>> is_tensor_like(ndgrad.ones(1)), is_tensor_like(1.0)
    (True, False)
    """
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


# ---------------------------------------------------------------------------- pickling, deepcopy
def _user_state(t: Tensor) -> dict:
    return {k: v for k, v in t.__dict__.items() if not (k.startswith("_") and k in _INTERNAL)}


_INTERNAL = frozenset(k for k in Tensor.__dict__ if k.startswith("_")) | {"_data"}


def _reduce_ex(self: Tensor, protocol: Any) -> tuple:
    with DisableTorchFunctionSubclass():
        return (_rebuild_subclass, (type(self), self._data, self._requires_grad,
                                    _user_state(self)))


def _rebuild_subclass(cls: type, data: Any, requires_grad: bool, state: dict) -> Tensor:
    t: Tensor = object.__new__(cls)
    t._data = data
    t._requires_grad = requires_grad
    t.__dict__.update(state)
    return t


def _deepcopy(self: Tensor, memo: dict) -> Tensor:
    import copy
    if id(self) in memo:
        return memo[id(self)]
    plain = Tensor.__deepcopy__(self, memo)   # Tensor's checks; registers itself in memo
    out = object.__new__(type(self))
    out.__dict__.update(plain.__dict__)
    memo[id(self)] = out
    for k, v in _user_state(self).items():
        out.__dict__[k] = copy.deepcopy(v, memo)
    return out


Tensor.__torch_function__ = classmethod(_default_torch_function)  # type: ignore[attr-defined]
Tensor.__init_subclass__ = classmethod(init_subclass)  # type: ignore[assignment]
