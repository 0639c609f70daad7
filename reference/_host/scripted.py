"""``ScriptedProvider``: a provider that plays a language-neutral script and records every request.

A script is YAML (or the equivalent JSON) with one entry per provider invocation, in order::

    calls:
      - chunks:
          - {type: text_delta, text: "Hello"}
          - {type: stop, stopReason: stop, usage: {inputTokens: 12, outputTokens: 3}}
      - chunks:
          - {type: error, error: {kind: rate_limit, message: "slow down"}}

Each call streams its chunks in order; a classified error can stand at any position (first: the
provider refused before any content; later: it failed mid-stream).  ``expectModel`` optionally
pins the model the call must be made for.  The schema is ``schemas/provider-script.schema.json``.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import Field
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from relavium_reference._model.errors import InvalidInputError, ScriptError
from relavium_reference._model.llm import LlmRequest, StreamChunk
from relavium_reference._model.shapes import WireModel, parse_strict

__all__ = ["ProviderCall", "ProviderScript", "RecordedRequest", "ScriptedProvider", "load_script"]


class ProviderCall(WireModel):
    chunks: tuple[StreamChunk, ...] = Field(min_length=1)
    expect_model: str | None = None


class ProviderScript(WireModel):
    calls: tuple[ProviderCall, ...]


class RecordedRequest(WireModel):
    """A request as the provider received it (a JSON copy), with its position in the script."""

    index: int
    model: str
    request: dict[str, Any]


def load_script(path: str | Path) -> ProviderScript:
    """The provider script at ``path``: ``InvalidInputError`` for a path that is not a string or a
    ``Path`` or for a malformed script, ``ScriptError`` for a file that cannot be read as YAML."""
    if not isinstance(path, str | Path):
        raise InvalidInputError("a script path must be a string or a Path", location="path")
    try:
        data = YAML(typ="safe", pure=True).load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeError, ValueError, YAMLError, RecursionError):
        raise ScriptError("the provider script cannot be read as YAML") from None
    return parse_strict(ProviderScript, data)


class ScriptedProvider:
    """Serves :class:`ProviderScript` calls in order, for every model it is asked about."""

    def __init__(self, script: ProviderScript | dict[str, Any]) -> None:
        self._script = script if isinstance(script, ProviderScript) else parse_strict(ProviderScript, script)
        self._next = 0
        self.requests: list[RecordedRequest] = []

    @property
    def remaining(self) -> int:
        return len(self._script.calls) - self._next

    def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        if self._next >= len(self._script.calls):
            raise ScriptError(f"the provider script has only {len(self._script.calls)} calls")
        call = self._script.calls[self._next]
        if call.expect_model is not None and call.expect_model != request.model:
            raise ScriptError(
                f"script call {self._next} expects model {call.expect_model!r}, got {request.model!r}"
            )
        self.requests.append(
            RecordedRequest(index=self._next, model=request.model, request=copy.deepcopy(request.to_wire()))
        )
        self._next += 1
        return self._play(call)

    @staticmethod
    async def _play(call: ProviderCall) -> AsyncIterator[StreamChunk]:
        for chunk in call.chunks:
            yield chunk
