"""Export of a persisted session to a ``.relavium.yaml`` workflow scaffold (public module).

* :func:`workflow_id` - the deterministic, kebab-case workflow id of a session (title or session id);
* :func:`session_to_workflow` - the pure mapping from a session record and its transcript to a
  :class:`WorkflowDocument` (one agent node per completed turn, the transcript in metadata);
* :func:`serialize_workflow` - the document's deterministic YAML text (sorted keys, stable bytes);
* :func:`parse_workflow` - the strict parser of that YAML, so a round trip is checked, not assumed.

The kit's choices where the specification leaves a detail open are ``KD-EXP-*`` in
``docs/kit-defined.md``.
"""

from __future__ import annotations

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.workflow import WorkflowDocument, document_to_data, parse_workflow_data
from relavium_reference._rules.export_mapping import session_to_workflow
from relavium_reference._rules.workflow_id import workflow_id
from relavium_reference._rules.workflow_yaml import dump_yaml, load_yaml

__all__ = [
    "WorkflowDocument",
    "parse_workflow",
    "serialize_workflow",
    "session_to_workflow",
    "workflow_id",
]


def serialize_workflow(document: WorkflowDocument) -> str:
    """The deterministic YAML text of ``document`` (UTF-8 ready, one final newline).
    ``InvalidInputError``: ``document`` is not a ``WorkflowDocument``."""
    if not isinstance(document, WorkflowDocument):
        raise InvalidInputError("serialize_workflow needs a WorkflowDocument", location="document")
    return dump_yaml(document_to_data(document))


def parse_workflow(text: str) -> WorkflowDocument:
    """Parse exported workflow YAML strictly.

    Raises :class:`~relavium_reference.InvalidInputError` (fixed message, field location, never the
    offending value) for malformed YAML, non-JSON values, unknown or missing fields, an invalid
    transcript in ``metadata.relaviumExport``, duplicate node or agent ids, and an agent whose fallback
    plan repeats a provider/model pair (an exported historical snapshot may need that repair).
    """
    return parse_workflow_data(load_yaml(text))
