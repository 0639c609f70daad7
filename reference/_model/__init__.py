"""_model room."""
