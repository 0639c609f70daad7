"""The exported workflow document: strict models, the strict parser's checks and its JSON Schema.

The models cover the subset of the workflow format (companion facts section 6) that a session export
produces and that the parser accepts back:

``{schema_version: "1.0", workflow: {id, name?, metadata?, agents?, nodes, edges}}`` with ``input``,
``agent`` and ``output`` nodes and ``{from, to}`` edges.  Keys are snake_case as in the authored format;
``metadata.relaviumExport`` keeps the persisted camelCase transcript.

Checks beyond the shape, in the models: node ids and agent ids are unique; ``metadata.relaviumExport``,
when present, is a strict session transcript (KD-EXP-5).  :func:`admit_workflow` adds the authoring
rule an exported historical snapshot may break (KD-EXP-7): an agent's fallback plan repeats no
provider/model pair.  :func:`session_to_workflow` never applies it, so export never rewrites history.
"""

from __future__ import annotations

import itertools
import json
import operator
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, JsonValue, StrictStr, model_validator

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.gc_pause import gc_paused
from relavium_reference._model.messages import ISO_TIMESTAMP_PATTERN, SCHEMA_DRAFT, SessionMessage
from relavium_reference._model.shapes import (
    KEBAB_ID_PATTERN,
    AgentSnapshot,
    StrictModel,
    WireModel,
    parse_strict,
)

__all__ = [
    "EXPORT_METADATA_KEY",
    "SCHEMA_VERSION",
    "AgentNode",
    "Edge",
    "InputNode",
    "OutputNode",
    "RelaviumExport",
    "WorkflowDocument",
    "WorkflowMetadata",
    "WorkflowNode",
    "WorkflowSpec",
    "admit_workflow",
    "document_to_data",
    "parse_workflow_data",
    "render_schema",
    "workflow_json_schema",
]

SCHEMA_VERSION = "1.0"
EXPORT_METADATA_KEY = "relaviumExport"
SCHEMA_FILE = "workflow.schema.json"
SCHEMA_ID = "https://relavium.dev/conformance/schemas/" + SCHEMA_FILE

KebabId = Annotated[StrictStr, Field(pattern=KEBAB_ID_PATTERN)]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Timestamp = Annotated[StrictStr, Field(pattern=ISO_TIMESTAMP_PATTERN)]
_SEQUENCE_NUMBER = operator.attrgetter("sequence_number")
_SESSION_ID = operator.attrgetter("session_id")


class RelaviumExport(WireModel):
    """``metadata.relaviumExport``: the session's identity and its full persisted transcript."""

    source: Literal["session"]
    session_id: NonEmpty
    agent_slug: KebabId
    title: NonEmpty | None = None
    created_at: Timestamp
    updated_at: Timestamp
    messages: tuple[SessionMessage, ...]

    @model_validator(mode="after")
    def _one_ordered_transcript(self) -> RelaviumExport:
        sequence = list(map(_SEQUENCE_NUMBER, self.messages))
        if not all(map(operator.lt, sequence, itertools.islice(sequence, 1, None))):
            raise ValueError("transcript messages must be in strictly increasing sequenceNumber order")
        if not set(map(_SESSION_ID, self.messages)) <= {self.session_id}:
            raise ValueError("a transcript message belongs to another session")
        return self


class InputNode(StrictModel):
    id: KebabId
    type: Literal["input"]
    label: NonEmpty | None = None


class AgentNode(StrictModel):
    id: KebabId
    type: Literal["agent"]
    agent_ref: KebabId
    prompt_template: NonEmpty | None = None
    tools: tuple[NonEmpty, ...] | None = None


class OutputNode(StrictModel):
    id: KebabId
    type: Literal["output"]


WorkflowNode = Annotated[InputNode | AgentNode | OutputNode, Field(discriminator="type")]


class Edge(StrictModel):
    from_: Annotated[NonEmpty, Field(alias="from")]
    to: NonEmpty


class WorkflowMetadata(WireModel):
    """``workflow.metadata``: an open record whose reserved ``relaviumExport`` key is typed."""

    # Only the camelCase key is the reserved one: ``relavium_export`` is an ordinary extra key here.
    model_config = ConfigDict(extra="allow", validate_by_name=False, populate_by_name=False)
    __pydantic_extra__: dict[str, JsonValue]

    relavium_export: RelaviumExport | None = None

    def to_data(self) -> dict[str, JsonValue]:
        """Plain data: every other key exactly as given (nulls kept), the transcript in wire form."""
        data: dict[str, JsonValue] = dict(self.model_extra or {})
        if self.relavium_export is not None:
            data[EXPORT_METADATA_KEY] = self.relavium_export.to_wire()
        return data


class WorkflowSpec(StrictModel):
    id: KebabId
    name: NonEmpty | None = None
    metadata: WorkflowMetadata | None = None
    agents: Annotated[tuple[AgentSnapshot, ...], Field(min_length=1)] | None = None
    nodes: Annotated[tuple[WorkflowNode, ...], Field(min_length=1)]
    edges: tuple[Edge, ...]

    @model_validator(mode="after")
    def _unique_ids(self) -> WorkflowSpec:
        node_ids = [node.id for node in self.nodes]
        if len(node_ids) != len(set(node_ids)):
            raise ValueError("duplicate node id")
        agent_ids = [agent.id for agent in self.agents or ()]
        if len(agent_ids) != len(set(agent_ids)):
            raise ValueError("duplicate agent id")
        return self


class WorkflowDocument(StrictModel):
    schema_version: Literal["1.0"]
    workflow: WorkflowSpec


@gc_paused
def document_to_data(document: WorkflowDocument) -> dict[str, Any]:
    """Plain JSON-shaped data of ``document``: absent optional fields left out, nulls in metadata kept."""
    spec = document.workflow
    workflow: dict[str, Any] = {"id": spec.id}
    if spec.name is not None:
        workflow["name"] = spec.name
    if spec.metadata is not None:
        workflow["metadata"] = spec.metadata.to_data()
    if spec.agents is not None:
        workflow["agents"] = [agent.to_wire() for agent in spec.agents]
    # One serializer call for both lists (no field of a node or an edge has an alias other than ``from``,
    # and no edge field may be null): the same data as dumping each node and each edge on its own.
    lists = spec.model_dump(mode="json", by_alias=True, exclude_none=True, include={"nodes", "edges"})
    workflow["nodes"], workflow["edges"] = lists["nodes"], lists["edges"]
    return {"schema_version": document.schema_version, "workflow": workflow}


def parse_workflow_data(data: Any) -> WorkflowDocument:
    """Validate JSON-shaped data as an exported workflow, then apply :func:`admit_workflow`."""
    document = parse_strict(WorkflowDocument, data)
    admit_workflow(document)
    return document


def admit_workflow(document: WorkflowDocument) -> None:
    """The authoring rule a historical snapshot may break: no repeated provider/model pair (KD-EXP-7).

    An agent's plan is its primary ``(provider, model)`` followed by each ``fallback_chain`` entry.
    """
    for index, agent in enumerate(document.workflow.agents or ()):
        seen = {(agent.provider, agent.model)}
        for position, entry in enumerate(agent.fallback_chain):
            pair = (entry.provider, entry.model)
            if pair in seen:
                raise InvalidInputError(
                    "agent fallback plan repeats a provider/model pair",
                    location=f"workflow.agents.{index}.fallback_chain.{position}",
                )
            seen.add(pair)


def workflow_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the exported workflow document, generated from the models.

    ``metadata`` is an open record whose reserved ``relaviumExport`` key has the strict transcript
    shape, so that other languages validate the same document.
    """
    body = WorkflowDocument.model_json_schema(by_alias=True, mode="validation")
    definitions = body["$defs"]
    for definition in definitions.values():
        # A discriminator is required on the wire even where a Python model gives it a default.
        type_schema = definition.get("properties", {}).get("type", {})
        if "const" in type_schema and "type" not in definition.get("required", []):
            definition["required"] = ["type", *definition.get("required", [])]
            type_schema.pop("default", None)
    description = "A workflow document as a session export produces it and the strict parser accepts it."
    return {"$schema": SCHEMA_DRAFT, "$id": SCHEMA_ID, "description": description, **body}


def render_schema() -> str:
    """The committed text of ``schemas/workflow.schema.json``."""
    from relavium_reference._model.strict_schema import strict_clean

    return (
        json.dumps(strict_clean(workflow_json_schema()), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )
