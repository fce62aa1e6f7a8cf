"""``ndgrad.backends.cpu``: the CPU's vector capability, as PyTorch names it.

Example:
    >>> import ndgrad
    >>> ndgrad.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
    True
"""

import importlib


def get_cpu_capability() -> str:
    """``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``: the widest x86 vector set NumPy detected."""
    feats: dict = {}
    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):  # NumPy 2, 1
        try:
            feats = importlib.import_module(name).__cpu_features__
            break
        except (ImportError, AttributeError):
            continue
    if feats.get("AVX512F") and feats.get("AVX512BW") and feats.get("AVX512VL"):
        return "AVX512"
    if feats.get("AVX2") and feats.get("FMA3"):
        return "AVX2"
    return "DEFAULT"
