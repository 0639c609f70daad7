"""_host room."""
