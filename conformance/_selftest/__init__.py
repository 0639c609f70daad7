"""_selftest room: proof that the kit's cases bite and that the runner survives a misbehaving program.

* ``breaks/``: the deliberately broken implementations, one module per area of the clause catalogue,
  each registered where it is defined; ``base``: the shape of a break and its decorator ``break_of``;
* ``stores/``: the broken session stores of the store profile, by SS- area, and their selftest;
* ``proofs``: the selftest itself; ``verdicts``: the verdict both profiles share;
* ``compliant``, ``compliant_shapes``: compliant alternatives the kit must accept;
* ``wire_variants``: the base of the breaks and alternatives that change what goes on the wire;
  ``interop_dialect``: a private row dialect for the interop check.

Lives here: the modules above, nothing else: a break is filed by the clause area it breaks.

Must not live here: a case, a check or a judge (a break no case catches is fixed in the corpus, never by
teaching the judge about the break), and nothing the kit needs to judge another implementation.

May import: ``_errors``, ``_data``, ``_version``, ``_wire``, ``_corpus``, ``_report``, ``_judge``,
``_reference``, ``_run``, ``_store`` (the rooms below it; tests/test_layering.py holds the order), and the
engine, internals included (``relavium_reference._model``, ``relavium_reference._rules``,
``relavium_reference._host``).
"""
