"""``ndgrad.optim``: torch.optim's algorithms, update rules, defaults and ``state_dict`` layout
(Note [Optimizer updates] in ``optimizer.py``), and ``lr_scheduler``.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([3.0], requires_grad=True)
    >>> opt = ndgrad.optim.Adam([w], lr=0.5)
    >>> for _ in range(50):
    ...     opt.zero_grad()
    ...     loss = ((w - 1) ** 2).sum()
    ...     loss.backward()
    ...     opt.step()
    >>> abs(w.item() - 1) < 0.1
    True
"""

from . import lr_scheduler  # noqa: F401
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam



def __getattr__(name: str):
    """``swa_utils`` loads on first use (it needs ``ndgrad.nn``)."""
    if name == "swa_utils":
        import importlib
        return importlib.import_module(f"{__name__}.swa_utils")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "ASGD", "Rprop", "LBFGS", "SparseAdam", "Adafactor", "Muon",
           "lr_scheduler"]
