"""_rules room."""
