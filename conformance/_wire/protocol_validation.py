"""``--validate-protocol``: every message, both directions, checked against ``schemas/protocol/``.

The JSON-RPC envelope is checked against ``protocol/jsonrpc.schema.json``; a request's ``params``
and a successful answer's ``result`` against the schema of its method
(``protocol/methods/<method>.schema.json``).  The first violation breaks the connection with a
clear reason; the runner reports the case as ``errored`` and goes on.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry

from relavium_conformance._data import schemas_dir
from relavium_conformance._wire.model import schema_registry
from relavium_conformance._wire.protocol import METHODS

__all__ = ["ProtocolValidator"]


@cache
def _validators() -> tuple[
    Draft202012Validator, dict[str, tuple[Draft202012Validator, Draft202012Validator]]
]:
    root = schemas_dir() / "protocol"
    envelope_schema = json.loads((root / "jsonrpc.schema.json").read_text(encoding="utf-8"))
    registry: Registry[Any] = schema_registry()
    envelope = Draft202012Validator(envelope_schema, registry=registry)
    methods: dict[str, tuple[Draft202012Validator, Draft202012Validator]] = {}
    for row in METHODS:
        method = row.name
        schema = json.loads((root / "methods" / f"{method}.schema.json").read_text(encoding="utf-8"))
        defs = schema.get("$defs", {})
        params = {**schema["properties"]["params"], "$defs": defs}
        result = {**schema["properties"]["result"], "$defs": defs}
        methods[method] = (
            Draft202012Validator(params, registry=registry),
            Draft202012Validator(result, registry=registry),
        )
    return envelope, methods


class ProtocolValidator:
    """A validator for the JSON-RPC peer (see ``_jsonrpc.Validator``), from the kit's side."""

    def __init__(self) -> None:
        self.checked = 0

    def __call__(self, direction: str, message: dict[str, Any], method: str | None) -> None:
        envelope, methods = _validators()
        envelope.validate(message)
        self.checked += 1
        if method is None or method not in methods:
            if "method" in message and method not in methods:
                raise ValueError(f"unknown method {method!r}")
            return
        params_validator, result_validator = methods[method]
        if "method" in message:
            params_validator.validate(message.get("params", {}))
        elif "result" in message:
            result_validator.validate(message["result"])

    def check_call(self, method: str, params: Any) -> None:
        """The in-process form: check the params of a call in either direction."""
        _envelope, methods = _validators()
        methods[method][0].validate(params)

    def check_result(self, method: str, result: Any) -> None:
        _envelope, methods = _validators()
        methods[method][1].validate(result)
