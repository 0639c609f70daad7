"""_corpus room."""
