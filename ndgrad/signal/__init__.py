"""``ndgrad.signal``: PyTorch's ``torch.signal`` (the ``windows`` submodule).

Example:
    >>> import ndgrad
    >>> ndgrad.signal.windows.hann(3).tolist()
    [0.0, 1.0, 0.0]
"""

from . import windows  # noqa: F401
