"""nn op family: scaled_dot_product_attention, multi_head_attention_forward

Placeholder: filled by the nn issue."""

__all__: list = []

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = ""
