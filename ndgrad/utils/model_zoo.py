"""``torch.utils.model_zoo``: ``load_url`` is ``ndgrad.hub.load_state_dict_from_url``.

>>> from ndgrad.utils import model_zoo
>>> import ndgrad.hub
>>> model_zoo.load_url is ndgrad.hub.load_state_dict_from_url
True
"""

from ..hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
