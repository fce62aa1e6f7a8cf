"""The modules of ``ndgrad.utils.benchmark`` (torch keeps them under
``torch.utils.benchmark.utils``): ``common``, ``timer`` and ``compare``."""

from . import common, compare, timer  # noqa: F401
