"""_run room: the kit plays the world and runs the cases.

Lives here: the runner (``runner.py``, ``parallel.py``, ``kept.py``), the execution of one golden
transcript (``execute.py``, ``case_setup.py``, ``limits.py``) with the world the kit plays around it:
provider, tools and host (``case_world.py``) and its collaborators behind declared ports, the cost
governor and usage writer (``accounting_world.py``) and the compaction callbacks
(``compaction_world.py``); ordering by signals (``signals.py``), the scripted failure answers
(``failures.py``) and the loopback HTTP dialect server (``dialect_server.py``, ``dialect_render.py``);
the vector-suite runner (``vectors.py``), fuzzing (``fuzz.py``) and interop (``interop.py``).

Must not live here: judging what was observed (observations, matching, the judge, the event, turn and
export checks are ``_judge/``), reports (``_report/``), the case format (``_corpus/``) and any engine
import (the kit reaches engine internals only from ``_reference/`` and ``_selftest/``).

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus``, ``_report``, ``_judge``,
``_reference`` (the rooms below it; tests/test_layering.py holds the order).
"""
