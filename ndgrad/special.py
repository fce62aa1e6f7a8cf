"""``ndgrad.special``: PyTorch's ``torch.special`` namespace.

Example:
    >>> import ndgrad
    >>> ndgrad.special.xlogy(ndgrad.tensor([0.0]), ndgrad.tensor([0.0])).tolist()
    [0.0]
"""

from __future__ import annotations

from ._signature import wrap

# ---- binary (issue 8) ----
from .ops import binary as _binary  # noqa: E402

xlogy = wrap("xlogy(Tensor|Scalar input, Tensor|Scalar other)", _binary.xlogy)
xlog1py = wrap("xlog1py(Tensor|Scalar input, Tensor|Scalar other)", _binary.xlog1py)
# ---- end binary ----
