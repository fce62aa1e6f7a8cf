"""``ndgrad.backends.openmp``: ndgrad has no OpenMP parallel kernels (its parallel work is the
BLAS library's threads, ``ndgrad.set_num_threads``)."""


def is_available() -> bool:
    """False: no OpenMP kernels."""
    return False
