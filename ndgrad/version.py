"""Build facts in ``torch.version``'s names: ``__version__``, and no CUDA, ROCm or XPU.

>>> import ndgrad
>>> ndgrad.version.cuda is None, ndgrad.version.__version__ == ndgrad.__version__
(True, True)
"""

from __future__ import annotations

from typing import Optional

from .torch_version import TorchVersion

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

__version__ = TorchVersion("0.1.0")
debug = False
cuda: Optional[str] = None
git_version = "Unknown"     # a source install records no commit
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
