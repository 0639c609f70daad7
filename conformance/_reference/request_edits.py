"""The ``request-edits`` hook on the reference's side: a provider's edits applied to the handed request.

The kit's ``provider.open`` answer may carry edits (KD-PROJ-3). The adapter applies them, in order, to the
very :class:`LlmRequest` its engine handed to the provider, as a careless provider would: the request's
message list is changed in place (a message dropped, or replaced by a copy with one part's text changed
or one part dropped; the reference's messages and parts are frozen values, so replacing the list item is
the only edit a provider can make). An engine whose requests own their lists never sees the change again;
one that shares a list with a later request or with its working transcript does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from relavium_reference._model.llm import LlmRequest

__all__ = ["apply_edits"]


def apply_edits(request: LlmRequest, edits: Iterable[Mapping[str, Any]]) -> None:
    """Apply ``edits`` in place to ``request``'s message list; an edit naming nothing there is skipped."""
    messages = request.messages
    for edit in edits:
        index = int(edit.get("message", -1))
        if not 0 <= index < len(messages):
            continue
        if edit.get("edit") == "drop_message":
            del messages[index]
            continue
        message = messages[index]
        content = list(message.content)
        part = int(edit.get("part", -1) if edit.get("part") is not None else -1)
        if not 0 <= part < len(content):
            continue
        if edit.get("edit") == "drop_part":
            del content[part]
        elif edit.get("edit") == "set_text" and getattr(content[part], "type", None) == "text":
            content[part] = content[part].model_copy(update={"text": str(edit.get("text", ""))})
        else:
            continue
        messages[index] = message.model_copy(update={"content": tuple(content)})
