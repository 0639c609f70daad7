"""The files the engine generates, as committed (for ``regen-schemas``): its JSON Schemas under
``schemas/`` and the lifecycle table of ``docs/lifecycle.md``.

The engine builds them from its own models and tables (``relavium_reference._schemas``, the workflow
document's generator, the lifecycle table); this room is where the kit may read engine internals, so the
command line asks here.
"""

from __future__ import annotations

__all__ = ["engine_schema_texts", "lifecycle_page"]


def engine_schema_texts() -> dict[str, str]:
    """File name (under ``schemas/``) -> its committed text, for every schema the engine generates."""
    from relavium_reference._model.workflow import SCHEMA_FILE, render_schema
    from relavium_reference._schemas import engine_schemas, render

    texts = {name: render(schema) for name, schema in engine_schemas().items()}
    texts[SCHEMA_FILE] = render_schema()
    return texts


def lifecycle_page() -> str:
    """The text of ``docs/lifecycle.md``: the lifecycle table, rendered from the engine's own."""
    from relavium_reference._rules.lifecycle import render_markdown

    return render_markdown()
