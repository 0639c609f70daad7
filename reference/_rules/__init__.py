"""_rules room: the engine's decisions, as pure functions of values.

Lives here: the lifecycle table (``lifecycle.py``), the turn caps (``turn_cap.py``), the fold of one
attempt's stream (``stream_fold.py``), projection, trim and resume (``projection.py``, ``trim.py``,
``resume.py``), compaction's measure and plan (``compaction_measure.py``, ``compaction_plan.py``,
``auto_compaction.py``), overflow classification (``overflow.py``), budget and memory policy
(``budget.py``, ``memory.py``), the vendors' HTTP dialects without their I/O (``dialect_*.py``,
``sse.py``), the ``history.db`` row codec (``history_rows.py``, ``history_fast.py``), the session-store
contract's pure helpers (``session_store_helpers.py``, ``store_text.py``, ``pg_dsn.py``) and the export
mapping and its YAML form (``export_mapping.py``, ``workflow_id.py``, ``workflow_yaml.py``,
``yaml_fast.py``).

Must not live here: anything that waits, stores, spawns or talks: no asyncio, sqlite3, subprocess,
threading or httpx (tests/test_layering.py checks it); the async shell that drives these decisions is
``_host/``.

May import: ``_model`` (the room below it; tests/test_layering.py holds the order).
"""
