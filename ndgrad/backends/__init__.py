"""``ndgrad.backends``: the accelerator backends PyTorch programs query; ndgrad has none.

Example:
    >>> import ndgrad
    >>> ndgrad.backends.mps.is_available(), ndgrad.backends.cudnn.is_available()
    (False, False)
"""

from . import cpu, cuda, cudnn, mha, mkldnn, mps, openmp  # noqa: F401
