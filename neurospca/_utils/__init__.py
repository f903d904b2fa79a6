"""Private utilities shared by every layer: validation, atomic writing, shared docstrings."""
