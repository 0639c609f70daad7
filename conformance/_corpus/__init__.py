"""_corpus room: what the kit tests, as data.

Lives here: the clause catalogue (``catalogue.py``), the golden-transcript format and one file's loading
(``cases.py``), finding the whole corpus with wire twins and vector cases (``discovery.py``,
``twins.py``, ``vectors.py``), the corpus index and selection (``index.py``, ``selection.py``), generated
cases (``generated/``) and the breaks only they catch (``boundary_breaks.py``), recorded provider errors
(``provider_errors.py``), coverage (``coverage.py``) and the small checks vector answers need
(``checks.py``).

Must not live here: running or judging a case (``_run/``, ``_judge/``), any engine import, and no
import circle between these modules (tests/test_layering.py checks both).

May import: ``_errors``, ``_data``, ``_version``, ``_wire`` (the rooms below it).
"""
