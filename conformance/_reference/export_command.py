"""The ``export`` sub-command: the reference host's export of a persisted session (engine-side code).

The command itself belongs to the reference engine's host room; this module is where the kit's command
line reaches it (the reference room is the kit's one door to engine internals besides the selftest).
"""

from __future__ import annotations

from relavium_reference._host.export_cli import register

__all__ = ["register"]
