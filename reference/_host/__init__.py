"""_host room: the engine's async shell, and everything that does I/O.

Lives here: ``AgentSession`` and its collaborators (``session.py``, ``session_wiring.py``,
``session_deps.py``, ``session_compaction.py``, ``auto_compaction.py``, ``overflow_recovery.py``,
``compaction_runner.py``), the turn core and its books (``turn.py``, ``turn_books.py``,
``round_resolution.py``, ``joint_commit.py``, ``provider_stream.py``, ``attempt_deadline.py``),
admission and usage (``admission.py``, ``usage.py``, ``history_usage.py``), the durable history
``history.db`` (``history_store.py``, ``history_files.py``, ``history_writes.py``, ``persister.py``), the
session-store contract's reference stores (``session_store_*.py``), the vendors' HTTP client
(``dialect_client.py``), the scripted provider (``scripted.py``), user commands (``commands.py``), the
event stamper (``stamper.py``) and the export command (``export_cli.py``).

Must not live here: a decision that needs no I/O (it belongs in ``_rules/``, where it is tested without
an event loop) and a data shape (``_model/``); and never the kit.

May import: ``_model``, ``_rules`` (the rooms below it; tests/test_layering.py holds the order).
"""
