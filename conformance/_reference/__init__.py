"""_reference room."""
