"""Fast paths give exactly the answers of the plain computations they short-cut (store times, TLS)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from relavium_reference._model.messages import _check_timestamp
from relavium_reference._rules.history_rows import MAX_EPOCH_MS, MIN_EPOCH_MS, iso_from_ms

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _plain_iso(ms: int) -> str:
    moment = _EPOCH + timedelta(milliseconds=ms)
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _plain_accepts(value: str) -> bool:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return parsed.tzinfo is not None


def _accepts(value: str) -> bool:
    try:
        _check_timestamp(value)
    except ValueError:
        return False
    return True


@given(
    st.integers(MIN_EPOCH_MS, MAX_EPOCH_MS) | st.sampled_from([MIN_EPOCH_MS, MAX_EPOCH_MS, -1, 0, 999, -1000])
)
def test_stored_time_text_is_the_strftime_form(ms: int) -> None:
    assert iso_from_ms(ms) == _plain_iso(ms)


_field = st.integers(0, 99).map(lambda n: f"{n:02d}")


@given(
    st.integers(0, 9999).map(lambda n: f"{n:04d}"),
    _field,
    _field,
    _field,
    _field,
    _field,
    st.sampled_from(["Z", "+00:00", "", "z", "Z "]),
)
def test_timestamp_check_agrees_with_fromisoformat(
    year: str, month: str, day: str, hour: str, minute: str, second: str, zone: str
) -> None:
    value = f"{year}-{month}-{day}T{hour}:{minute}:{second}.123{zone}"
    assert _accepts(value) == _plain_accepts(value)


def test_timestamp_check_edges() -> None:
    for value in ["2024-02-29T23:59:59.999Z", "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"]:
        assert _accepts(value)
    for value in [
        "2026-02-29T00:00:00.000Z",
        "0000-01-01T00:00:00.000Z",
        "2026-04-31T00:00:00.000Z",
        "2026-01-01T24:00:00.000Z",
        "2026-01-01T00:00:60.000Z",
        "\u0662\u0660\u0662\u0666-01-01T00:00:00.000Z",
    ]:
        assert _accepts(value) == _plain_accepts(value)
        assert not _accepts(value)


def test_every_http_client_shares_one_verifying_tls_context() -> None:
    import ssl

    from relavium_reference._host.dialect_client import _tls_context

    context = _tls_context()
    assert context is _tls_context()  # built once per process, not once per request
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
