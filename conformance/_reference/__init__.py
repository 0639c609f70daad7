"""_reference room: the reference engine as the kit serves it, the one kit room (besides ``_selftest``)
that reaches engine internals.

Lives here: the reference behind the kit's message set (``impl.py``), its stdio server
(``stdio_server.py``), the host callbacks the kit plays for it (``kit_callbacks.py``), the provider's
request edits (``request_edits.py``), the reference session stores behind the store profile
(``session_store_impl.py``, ``session_store_pg.py``), the ``export`` sub-command's engine side
(``export_command.py``) and the engine's generated files for ``regen-schemas`` (``engine_schemas.py``).

Must not live here: anything the kit needs to judge another implementation: the cases, the judge and
the runner stay free of the engine, so a broken engine cannot break the kit's verdicts.

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus``, ``_report``, ``_judge`` (the
rooms below it; tests/test_layering.py holds the order), and the engine, internals included
(``relavium_reference._model``, ``relavium_reference._rules``, ``relavium_reference._host``).
"""
