"""Utilities: ``benchmark``, ``checkpoint``, ``data``, ``dlpack``, ``hooks``, ``model_zoo``,
``safetensors`` and ``_pytree`` (each loaded on first use)."""


def __getattr__(name: str):
    if name in ("benchmark", "data", "checkpoint", "dlpack", "hooks", "model_zoo", "safetensors",
                "_pytree"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
