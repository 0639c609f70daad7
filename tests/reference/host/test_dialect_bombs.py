"""Issue 35's bombs in a process of their own: the turn ends on its own, classified, in bounded memory.

Each runs one session turn against a hostile vendor on 127.0.0.1 with the engine's default caps, in a
subprocess whose peak resident memory (``resource.getrusage``) is what is measured: a 1 GiB error body
and a 1 GiB line without a newline are each read only up to their cap; tokens sent as fast as the server
can end at the attempt deadline or the reply cap, whichever comes first.  The full set of bombs, with the
default deadline, is ``python -m tests.reference.hostile_bombs all``.
"""

from __future__ import annotations

import pytest
from tests.reference.hostile_bombs import measure_in_subprocess

PEAK_MB = 400


@pytest.mark.parametrize(
    ("bomb", "provider_error"),
    [
        ("error-body-1GiB", "overloaded: HTTP 500"),
        ("line-without-newline-1GiB", "transport: the reply was cut: a server-sent line exceeded"),
        ("tokens-forever", ""),  # the deadline (timeout) or the reply cap (transport), whichever first
    ],
)
def test_a_bomb_ends_the_turn_classified_in_bounded_memory(bomb: str, provider_error: str) -> None:
    row = measure_in_subprocess(bomb, idle=2.0, total=3.0, timeout=120)
    assert row["status"] == "failed"
    assert row["code"] == "provider_unavailable"
    assert row["provider_error"].startswith(provider_error or ("timeout", "transport"))
    assert row["peak_rss_mb"] < PEAK_MB
