"""_wire room."""
