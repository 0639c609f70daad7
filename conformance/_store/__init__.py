"""_store room: the session-store profile (its protocol rows, cases, execution, runner)."""
