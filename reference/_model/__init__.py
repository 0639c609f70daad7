"""_model room: the engine's data, the lowest room.

Lives here: the strict shapes every other room speaks: the durable transcript (``messages.py``), the LLM
seam (``llm.py``, ``invocation.py``), events (``events.py``), tools and the turn policy (``tools.py``),
records handed to a store (``records.py``), results (``history_results.py``, ``commands.py``), the
exported workflow (``workflow.py``), the session-store shapes (``session_store_shapes.py``), closed
vocabularies (``vocabulary.py``), the exception root (``errors.py``) and small model helpers
(``prebuilt.py``, ``strict_schema.py``, ``gc_pause.py``, ``shapes.py``, ``usage_writer.py``).

Must not live here: decisions (``_rules/``), anything that waits, stores or talks (``_host/``); no
asyncio, sqlite3, subprocess, threading or httpx (tests/test_layering.py checks it).

May import: no other room of the engine (it is the lowest; tests/test_layering.py holds the order).
"""
