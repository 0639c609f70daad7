"""Export of a persisted session to a ``.relavium.yaml`` workflow scaffold (public module)."""

from __future__ import annotations

from ._workflow_id import workflow_id

__all__ = ["workflow_id"]
