"""``ndgrad.backends.mps``: no Metal (MPS) backend."""


def is_available() -> bool:
    """False: ndgrad has no MPS backend."""
    return False


def is_built() -> bool:
    """False: ndgrad is not built with MPS."""
    return False
