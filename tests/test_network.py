"""The suite's network guard (tests/conftest.py) refuses anything past loopback, and lets loopback through."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest


def _refused() -> Any:
    # tests/conftest.py is imported by pytest under its own name: match the guard's words, not its class
    return pytest.raises(RuntimeError, match="the suite may not")


def test_a_connection_past_loopback_is_refused_before_it_leaves() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, _refused():
        sock.connect(("192.0.2.1", 80))  # TEST-NET-1: would never answer anyway
    with _refused():
        socket.getaddrinfo("api.anthropic.com", 443)


def test_an_unmocked_http_client_cannot_reach_a_vendor() -> None:
    with _refused():
        httpx.get("https://api.openai.com/v1/models", timeout=1)


def test_loopback_is_allowed() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            accepted, _ = server.accept()
            accepted.close()
    assert socket.getaddrinfo("localhost", 80)
