"""_wire room: how the kit speaks to an implementation, and the messages it speaks.

Lives here: the JSON-RPC 2.0 envelope and peer (``envelope.py``, ``jsonrpc.py``), the protocol's method
table (``protocol.py``) and its params and result models (``protocol_messages.py``, ``budget_messages.py``,
``store_messages.py``) on the kit's own model base and shape judge (``model.py``, ``shape_memo.py``), the
handshake's version agreement (``handshake.py``), the adapters and the stdio process (``adapters.py``,
``process.py``, ``reaper.py``), and what watches the traffic (``trace.py``, ``protocol_validation.py``).

Must not live here: cases and their format (``_corpus/``), judging (``_judge/``), running a case
(``_run/``), and any engine internal: this is the boundary every implementation meets, the reference
included, so it knows the engine only by its public package (``relavium_reference``).

May import: ``_errors``, ``_data``, ``_version`` (the rooms below it; tests/test_layering.py holds the
order).
"""
