"""nn op family: embedding, embedding_bag, one_hot

Placeholder: filled by the nn issue."""

__all__: list = []

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = ""
