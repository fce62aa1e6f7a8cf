"""Maintenance scripts of the repository (not part of the installed package): generators of
files that are committed and checked for freshness by the tests.

- ``python -m tools.gen_stubs``: the type stubs ``ndgrad/__init__.pyi`` and
  ``ndgrad/_tensor_api.pyi`` (Note [Typed API] in ndgrad/types.py).
- ``python -m tools.gen_ops_doc``: ``docs/ops.md``, the op table's coverage.
"""
