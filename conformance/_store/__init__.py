"""_store room: the session-store profile, from its protocol rows to its runner.

Lives here: the profile's rows of the method table and the store's declaration (``protocol.py``), the
store cases' format and discovery (``cases.py``), carrying out one case (``execute.py``,
``replicas.py``), recorded histories and their judge (``history_run.py``, ``history_check.py``),
generated programs (``generation.py``), the model-based property test (``state_machine.py``) and the
profile's runner (``runner.py``).

Must not live here: the agent-session profile's cases and runner (``_corpus/``, ``_run/``), the broken
stores that prove these cases bite (``_selftest/stores/``), the reference stores themselves
(``_reference/`` serves them, the engine's ``_host`` holds them) and any engine import.

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus``, ``_report``, ``_judge``,
``_reference``, ``_run`` (the rooms below it; tests/test_layering.py holds the order).
"""
