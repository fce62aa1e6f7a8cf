"""``ndgrad.backends.cudnn``: no cuDNN. The flags programs set (``benchmark``,
``deterministic``) are accepted and have no effect."""

enabled = True
benchmark = False
deterministic = False


def is_available() -> bool:
    """False: ndgrad has no cuDNN backend."""
    return False
