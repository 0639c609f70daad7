"""_report room: what a run tells its reader.

Lives here: the results of a run, per case and per clause (``results.py``), and every way they leave the
process: JSON results, JUnit XML, Markdown, the terminal, the HTML compliance page (``json_report.py``,
``junit.py``, ``markdown.py``, ``terminal.py``, ``html.py``, ``writers.py``, ``atomic.py``), baselines
(``baseline.py``), shards (``shards.py``), provenance (``provenance.py``), exit statuses
(``exit_status.py``), the shared wording (``wording.py``) and the sanitising of what an implementation
supplies (``sanitize.py``).

Must not live here: deciding a verdict (``_judge/``), running anything (``_run/``), the command line's
flags (``_cli/``), and any engine import.

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus`` (the rooms below it;
tests/test_layering.py holds the order).
"""
