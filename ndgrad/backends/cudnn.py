"""``ndgrad.backends.cudnn``: no cuDNN. The flags programs set (``benchmark``,
``deterministic``, ``allow_tf32``) are accepted and have no effect."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: ndgrad has no cuDNN backend."""
    return False
