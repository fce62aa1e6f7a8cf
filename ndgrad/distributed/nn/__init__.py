"""``ndgrad.distributed.nn``: differentiable collectives (``functional``)."""

from . import functional  # noqa: F401

__all__ = ["functional"]
