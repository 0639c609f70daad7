"""_judge room: what the kit concludes from what it saw.

Lives here: the observation of one case (``observation.py``) and its normalised snapshot, matching of
expected against observed values (``matching.py``), the judge of a case (``judge.py``), the checks of
events (``events.py``), of committed turns and boundary markers (``turns.py``), of an exported YAML text
(``export_text.py``) and the kit's own strict reading of an exported workflow (``workflow.py``).

Must not live here: anything that talks to an implementation or plays the world (the runner, the case
world, the scripted answers: ``_run/``), and no engine import at all: the kit judges with its own
models, its own YAML reader and the shipped JSON Schemas, so a broken engine cannot break the judge.

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus``, ``_report`` (the rooms below
it; tests/test_layering.py holds the order).
"""
