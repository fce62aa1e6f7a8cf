"""``ndgrad.utils.benchmark``: torch.utils.benchmark's ``Timer``, ``Measurement`` and
``Compare``, for timing ndgrad code with the same scripts and printed tables.

Example:
    >>> import ndgrad
    >>> from ndgrad.utils import benchmark
    >>> x = ndgrad.ones(4, 4)
    >>> m = benchmark.Timer("x @ x", globals={"x": x}, description="4x4").timeit(5)
    >>> m.description, m.number_per_run
    ('4x4', 5)
"""

from .utils.common import (  # noqa: F401
    Measurement, TaskSpec, ordered_unique, select_unit, set_torch_threads, trim_sigfig,
    unit_to_english)
from .utils.compare import Colorize, Compare  # noqa: F401
from .utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias  # noqa: F401
from .utils.timer import Language, Timer, timer  # noqa: F401

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads", "Timer", "timer", "Language", "Colorize",
           "Compare", "Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]
