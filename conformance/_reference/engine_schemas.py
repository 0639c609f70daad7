"""The engine's generated JSON Schemas, as committed under ``schemas/`` (for ``regen-schemas``).

The engine builds them from its own models (``relavium_reference._schemas`` and the workflow document's
generator); this room is where the kit may read engine internals, so the command line asks here.
"""

from __future__ import annotations

__all__ = ["engine_schema_texts"]


def engine_schema_texts() -> dict[str, str]:
    """File name (under ``schemas/``) -> its committed text, for every schema the engine generates."""
    from relavium_reference._model.workflow import SCHEMA_FILE, render_schema
    from relavium_reference._schemas import engine_schemas, render

    texts = {name: render(schema) for name, schema in engine_schemas().items()}
    texts[SCHEMA_FILE] = render_schema()
    return texts
