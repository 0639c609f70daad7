"""_run room."""
