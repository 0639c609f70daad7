"""``run_sync``: ``asyncio.run`` with the result handed back outside the main task."""

from __future__ import annotations

import pytest

from relavium_conformance._run.runner import run_sync


class _Loud:
    """A result that notes every time something formats it."""

    def __init__(self) -> None:
        self.formatted = 0

    def __repr__(self) -> str:
        self.formatted += 1
        return "<loud>"


def test_the_result_comes_back_unformatted() -> None:
    result = _Loud()

    async def work() -> _Loud:
        return result

    assert run_sync(work()) is result
    # asyncio.run on Python 3.11 formats its main task's result when it puts back the Ctrl-C handler
    assert result.formatted == 0


def test_an_exception_comes_out_as_raised() -> None:
    async def work() -> None:
        raise LookupError("gone")

    with pytest.raises(LookupError, match="gone"):
        run_sync(work())
