"""nn op family: pad, pixel_shuffle, channel_shuffle

Placeholder: filled by the nn issue."""

__all__: list = []

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = ""
