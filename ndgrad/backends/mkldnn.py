"""``ndgrad.backends.mkldnn``: no oneDNN (MKL-DNN) backend; ``enabled`` is kept for programs that
set it."""

enabled = True


def is_available() -> bool:
    """False: ndgrad's kernels are NumPy's, not oneDNN's."""
    return False
