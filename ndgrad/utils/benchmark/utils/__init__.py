"""The modules of ``ndgrad.utils.benchmark`` (torch keeps them under
``torch.utils.benchmark.utils``): ``common``, ``timer``, ``compare`` and ``fuzzer``."""

from . import common, compare, fuzzer, timer  # noqa: F401
