"""_report room."""
