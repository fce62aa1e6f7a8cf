"""Helpers shared by the test files that run one program under PyTorch and ndgrad."""

import torch

import ndgrad


def both(fn):
    """``(fn(torch), fn(ndgrad))``: the same program run with each library as ``fn``'s module."""
    return fn(torch), fn(ndgrad)
