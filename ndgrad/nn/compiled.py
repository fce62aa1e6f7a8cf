"""Compiled modules: what ``ndgrad.compile(model)`` returns (``OptimizedModule``, torch.compile's
wrapper type) and what ``model.compile()`` installs.

Note [Compiled modules and training flags]
A traced graph holds whatever Python decided while tracing, and a module's ``training`` flag
decides a lot (batch statistics and running-stat updates in BatchNorm, dropout on or off). So
a trace records the modules it calls, their flags, their submodules and their attribute
versions (``recording_module_calls`` and Note [Guarded module attributes] in
nn/modules/module.py), and a specialization is valid only while those are unchanged
(``_Specialization.flags_ok`` in jit/api.py, checked on every call: two attribute reads per
module called, and a tuple of the submodules of each container). After
``model.eval()`` the next call traces the evaluation graph once; the training one is kept (up
to ``_MODES_KEPT`` other tuples per kind of input), so switching back and forth does not trace
again, as torch.compile's guards on ``training`` behave. This holds for compiled modules
(``ndgrad.compile(module)``, ``module.compile()``) and for compiled functions that call
modules.

Example:
    >>> import ndgrad
    >>> from ndgrad import nn
    >>> m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    >>> cm = ndgrad.compile(m)
    >>> type(cm).__name__, list(cm.state_dict())[:1]
    ('OptimizedModule', ['_orig_mod.0.weight'])
    >>> x = ndgrad.randn(4, 3)
    >>> _ = cm(x)
    >>> _ = cm.eval()
    >>> bool((cm(x) - m(x)).abs().max() == 0)
    True
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from ..jit.api import compile as _compile
from .modules.module import LazyModuleMixin, Module

__all__ = ["OptimizedModule", "LazyCompiledCall"]


class LazyCompiledCall:
    """Calls ``target`` (a module's uncompiled call) through ``ndgrad.compile(target,
    **options)``, made on first use, whose specializations are guarded on the modules they
    called (Note [Compiled modules and training flags]). Copies and pickles keep the
    options, not the compiled function (it traces again on first use)."""

    def __init__(self, module: Module, target: Callable, options: Dict[str, Any]) -> None:
        self._module = module
        self._target = target
        self._options = options
        self._compiled: Any = None

    def __getstate__(self) -> dict:
        return {"_module": self._module, "_target": self._target, "_options": self._options}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["_module"], state["_target"], state["_options"])  # type: ignore

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self._compiled
        if fn is None:
            if any(isinstance(m, LazyModuleMixin) and m.has_uninitialized_params()
                   for m in self._module.modules()):
                # a lazy module's first call makes its parameters (shapes and initial draws
                # that belong to no graph): run eagerly until every lazy module is initialized
                return self._target(*args, **kwargs)
            fn = self._compiled = _compile(self._target, **self._options)
        return fn(*args, **kwargs)


class OptimizedModule(Module):
    """``ndgrad.compile(module)``: a module wrapping the original as ``_orig_mod`` (so its
    parameters are the same tensors and its ``state_dict`` keys carry the ``_orig_mod.``
    prefix, as torch's), whose calls run compiled code. Attributes it does not have are read
    from the original module.

    >>> import ndgrad
    >>> lin = ndgrad.nn.Linear(2, 2)
    >>> cm = ndgrad.compile(lin)
    >>> cm.weight is lin.weight, cm._orig_mod is lin
    (True, True)
    """

    def __init__(self, mod: Module, **options: Any) -> None:
        super().__init__()
        self._orig_mod = mod
        self.training = mod.training
        self.__dict__["_guarded"] = LazyCompiledCall(mod, mod._call_impl, options)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_guarded"](*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "_orig_mod":
                raise
            return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        # as torch's: attributes other than the wrapper's own are set on the original module
        if name in _OWN or "_orig_mod" not in self.__dict__.get("_modules", ()):
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __len__(self) -> int:
        return len(self._orig_mod)

    def __getitem__(self, idx: Any) -> Any:
        return self._orig_mod[idx]  # type: ignore[index]


_OWN = frozenset({"_orig_mod", "training", "forward"})
