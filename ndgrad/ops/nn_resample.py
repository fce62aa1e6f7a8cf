"""nn op family: interpolate/upsample, grid_sample, affine_grid

Placeholder: filled by the nn issue."""

__all__: list = []

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = ""
