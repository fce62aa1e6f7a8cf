"""``ndgrad.fft``: discrete Fourier transforms with PyTorch's ``torch.fft`` API (Note [FFT
primitives] in ops/fft.py).

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0, 0.0, -1.0], requires_grad=True)
    >>> ndgrad.fft.rfft(x).abs().sum().backward()
    >>> x.grad
    tensor([ 0.,  1.,  0., -1.])
"""

from ._signatures import FFT_FUNCTIONS, install_namespace
from .ops.fft import (  # noqa: F401
    fft, fft2, fftfreq, fftn, fftshift, hfft, hfft2, hfftn, ifft, ifft2, ifftn, ifftshift, ihfft,
    ihfft2, ihfftn, irfft, irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn)

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftshift",
           "ifftshift", "fftfreq", "rfftfreq"]

install_namespace(globals(), FFT_FUNCTIONS)

# Under CPU autocast every FFT runs in float32 (Note [Autocast] in ops/_autocast.py).
from .ops import _autocast  # noqa: E402

for _name in __all__:
    if not _name.endswith(("freq", "shift")):
        globals()[_name] = _autocast.fp32_op(globals()[_name])
del _name
