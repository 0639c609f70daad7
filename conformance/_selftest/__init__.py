"""_selftest room."""
