"""``torch._dynamo.config`` for ``ndgrad.compile``: the switches programs set, with torch's
names and defaults; unknown names are refused as torch refuses them.

What each does here: ``recompile_limit`` (alias ``cache_size_limit``) is the number of
specializations a compiled function keeps when ``compile`` is not given ``cache_limit``;
``suppress_errors`` runs a function eagerly (with a warning) when building its compiled code
fails for a reason other than a trace error (torch: a backend's failure falls back to eager);
the others are accepted and recorded (ndgrad traces whole functions with static shapes, so they
have nothing to change).

>>> from ndgrad.jit.config import config
>>> config.cache_size_limit = 4
>>> config.recompile_limit
4
>>> config.recompile_limit = 8
"""

from __future__ import annotations

from typing import Any, Dict

__all__ = ["config", "GENERATION"]

_DEFAULTS: Dict[str, Any] = {
    "recompile_limit": 8, "accumulated_recompile_limit": 256, "suppress_errors": False,
    "verbose": False, "capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": False,
    "optimize_ddp": True, "automatic_dynamic_shapes": True, "assume_static_by_default": True,
    "force_parameter_static_shapes": True, "inline_inbuilt_nn_modules": True,
    "error_on_recompile": False, "guard_nn_modules": False,
}
_ALIASES = {"cache_size_limit": "recompile_limit",
            "accumulated_cache_size_limit": "accumulated_recompile_limit"}

# Bumped by ``reset()`` (``ndgrad.compiler.reset``, ``ndgrad._dynamo.reset``): a compiled
# function whose generation is older drops its specializations at its next call.
GENERATION = [0]


class _Config:
    """The switches, as attributes (module-like, as torch's config module)."""

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(_DEFAULTS))

    def _name(self, name: str) -> str:
        name = _ALIASES.get(name, name)
        if name not in _DEFAULTS:
            raise AttributeError(f"torch._dynamo.config.{name} does not exist")
        return name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._values[self._name(name)]

    def __setattr__(self, name: str, value: Any) -> None:
        self._values[self._name(name)] = value

    def __dir__(self) -> list:
        return sorted(set(_DEFAULTS) | set(_ALIASES))


config = _Config()


def reset() -> None:
    """Forget every compiled function's specializations (they trace again at their next
    call), as ``torch._dynamo.reset()`` does."""
    GENERATION[0] += 1
