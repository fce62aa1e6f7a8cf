"""nn op family: activation functions

Placeholder: filled by the nn issue."""

__all__: list = []

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = ""
