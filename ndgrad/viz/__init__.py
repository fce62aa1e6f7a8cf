"""Pictures of graphs: ``make_dot`` draws a tensor's backward graph the way torchviz draws
PyTorch's (see :mod:`ndgrad.viz.dot`).

>>> import ndgrad
>>> from ndgrad.viz import make_dot
>>> x = ndgrad.ones(2, requires_grad=True)
>>> "MulBackward0" in str(make_dot((x * 3).sum(), params={"x": x}))
True
"""

from .dot import make_dot, to_dot_text

__all__ = ["make_dot", "to_dot_text"]
