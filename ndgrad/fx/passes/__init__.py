"""FX passes (``torch.fx.passes``): ``shape_prop.ShapeProp``."""
