"""_judge room."""
