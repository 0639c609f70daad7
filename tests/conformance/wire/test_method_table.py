"""The method table is the one declaration of the protocol: each row has its handlers, schema and doc row."""

from __future__ import annotations

from pathlib import Path

import pytest

from relavium_conformance._corpus.cases import transcript_schema
from relavium_conformance._corpus.catalogue import CAPABILITIES
from relavium_conformance._data import schemas_dir
from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._reference.session_store_impl import ReferenceStoreImplementation
from relavium_conformance._run.case_world import ANSWERING
from relavium_conformance._store.protocol import FACES, STORE_METHODS
from relavium_conformance._wire.protocol import (
    CASE_OPERATIONS,
    METHODS,
    Method,
    method_table_markdown,
    with_method_table,
)

ROOT = Path(__file__).resolve().parents[3]


STORE_CAPABILITIES = {"session-store", "store:clock", *(f"store:{face}" for face in FACES)}


def _server(row: Method) -> type:
    """Who serves a row: the session-store profile's reference store, or the session engine."""
    return ReferenceStoreImplementation if row in STORE_METHODS else ReferenceImplementation


@pytest.mark.parametrize("row", METHODS, ids=lambda row: row.name)
def test_every_method_has_its_handler_its_schema_and_a_known_capability(row: Method) -> None:
    if row.direction == "kit":
        assert row.serve is not None
        assert callable(getattr(_server(row), row.serve, None))
        assert row.answer is None
    else:
        assert row.answer is not None
        assert [cls for cls in ANSWERING if callable(getattr(cls, row.answer, None))]
        assert row.serve is None
        assert row.case_op is None
    assert (schemas_dir() / "protocol" / "methods" / f"{row.name}.schema.json").is_file()
    assert row.capability in (STORE_CAPABILITIES if row in STORE_METHODS else CAPABILITIES)


def test_no_handler_exists_outside_the_table() -> None:
    served = {name for name in dir(ReferenceImplementation) if name.startswith("on_")}
    store_served = {name for name in dir(ReferenceStoreImplementation) if name.startswith("on_")}
    answered = {name for cls in ANSWERING for name in dir(cls) if name.startswith("on_")}
    assert served == {row.serve for row in METHODS if row.serve and row not in STORE_METHODS}
    assert store_served == {row.serve for row in STORE_METHODS if row.serve}
    assert answered == {row.answer for row in METHODS if row.answer}


def test_method_names_are_unique() -> None:
    assert len({row.name for row in METHODS}) == len(METHODS)


def test_the_documented_method_table_is_the_generated_one() -> None:
    page = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    assert method_table_markdown() in page
    assert with_method_table(page) == page, "regenerate: relavium-conformance regen-schemas"


def test_case_operations_are_the_table_s() -> None:
    schema = transcript_schema()
    op = schema["$defs"]["OpStep"]["properties"]["op"]
    assert op["enum"] == list(CASE_OPERATIONS)
