"""Helpers shared by the test files that run one program under PyTorch and ndgrad."""

import torch

import ndgrad


def both(fn):
    """``(fn(torch), fn(ndgrad))``: the same program run with each library as ``fn``'s module."""
    return fn(torch), fn(ndgrad)


def outcome(fn):
    """``("ok", value)`` or ``(error type, message)`` with the library name normalized."""
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001 - compared between libraries
        return type(e).__name__, str(e).replace("torch.", "ndgrad.")
    return "ok", value


def same_outcome(fn):
    """Run ``fn`` with each library; both must succeed with equal values or raise alike."""
    t = outcome(lambda: fn(torch))
    n = outcome(lambda: fn(ndgrad))
    assert t == n
    return t
