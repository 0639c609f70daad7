"""Shared test settings.

Hypothesis runs without deadlines: a verdict must never depend on how fast the machine is (CI machines
are shared and slow at times), so no test here fails for taking long, and no example is refused as too slow.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("relavium", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("relavium")


# -- nothing in the suite reaches past the loopback interface ------------------------------------------
# An audit hook sees every socket connect and every name lookup this process makes (tests/test_network.py
# proves it refuses); a non-loopback one raises before any packet leaves.  respx answers before a socket is
# opened, so the vendors' official base URLs can be mocked freely.  Subprocesses are not audited here: the
# kit's stdio engines talk only to loopback servers the kit starts.


class NonLoopbackConnection(RuntimeError):
    """A test tried to open a connection (or look up a name) beyond the loopback interface."""


def _is_loopback(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _network_audit(event: str, args: tuple[object, ...]) -> None:
    if event == "socket.connect":
        sock, address = args[0], args[1]
        family = getattr(sock, "family", None)
        host = address[0] if isinstance(address, tuple) and address else None
        if family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(host):
            raise NonLoopbackConnection(f"the suite may not connect to {host!r}")
    elif event == "socket.getaddrinfo":
        host = args[0]
        if host not in (None, b"", "") and not _is_loopback(host):
            raise NonLoopbackConnection(f"the suite may not look up {host!r}")


sys.addaudithook(_network_audit)


# -- the kit's parse cache and shape verdicts live in a temporary folder while the suite runs ------------
# (never in the checkout or the user's home); subprocesses the tests start inherit the same folder.  Under
# pytest-xdist the controller makes the folder and its workers share it (they inherit its variable): every
# entry is written by an atomic rename, so workers that meet fill it once for all instead of once each.
_KIT_CACHE_ENV = "RELAVIUM_CONFORMANCE_YAML_CACHE"
_SHARED_ENV = "RELAVIUM_CONFORMANCE_TEST_CACHE"  # the folder the controller made, as its workers see it
_kit_cache_folder: str | None = None


def _memory_backed_temp() -> None:
    """The suite's temporary files on ``/dev/shm`` (tmpfs, when it is there, writable and roomy), for the
    controller and so its workers and every subprocess: the stores' and the history's SQLite files
    fsync on every commit, which on a virtual disk is a wait, not a test.  Only power loss tells tmpfs
    from a disk, and no test cuts the power (a SIGKILL keeps the page cache either way).  A ``TMPDIR``
    or ``PYTEST_DEBUG_TEMPROOT`` already set is the user's choice and wins."""
    import os
    import tempfile

    if os.environ.get("PYTEST_XDIST_WORKER") or {"TMPDIR", "PYTEST_DEBUG_TEMPROOT"} & os.environ.keys():
        return
    shm = "/dev/shm"
    try:
        room = os.statvfs(shm)
    except OSError:
        return
    if not os.access(shm, os.W_OK) or room.f_bavail * room.f_frsize < 2 << 30:
        return
    os.environ["TMPDIR"] = os.environ["PYTEST_DEBUG_TEMPROOT"] = shm
    tempfile.tempdir = None  # (read again from TMPDIR)


def pytest_configure(config: object) -> None:
    import os
    import tempfile

    _memory_backed_temp()
    global _kit_cache_folder
    if os.environ.get(_KIT_CACHE_ENV) == "0":
        return
    shared = os.environ.get(_SHARED_ENV)
    if os.environ.get("PYTEST_XDIST_WORKER") and shared and os.path.isdir(shared):
        os.environ[_KIT_CACHE_ENV] = shared  # a worker: the controller's folder, which the controller removes
        return
    _kit_cache_folder = tempfile.mkdtemp(prefix="relavium-conformance-cache-")
    os.environ[_KIT_CACHE_ENV] = os.environ[_SHARED_ENV] = _kit_cache_folder


def pytest_unconfigure(config: object) -> None:
    import os
    import shutil

    if _kit_cache_folder is not None or os.environ.get("PYTEST_XDIST_WORKER"):
        from relavium_conformance._wire import shape_memo

        shape_memo.forget()  # nothing left to write at exit into the folder the controller removes
    if _kit_cache_folder is not None:
        shutil.rmtree(_kit_cache_folder, ignore_errors=True)


# -- the kit's wheel, built once per session: tests/test_wheel.py and the CI recipe's test install it ----
# (both carry xdist_group("kit-wheel"), so under --dist loadgroup one worker builds it once)


@pytest.fixture(scope="session")
def kit_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.wheelkit import build_wheel, copy_sources

    source = copy_sources(tmp_path_factory.mktemp("kit-source") / "relavium-conformance")
    return build_wheel(source, tmp_path_factory.mktemp("kit-dist"))


# -- the long tests first: under -n, xdist hands out work in collection order, so a long test collected
# last keeps one worker busy while the other has nothing left (a longest-first order, as a scheduler
# would); the `slow` mark and the shared results' groups name them.  The order is stable otherwise.


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def long_first(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("xdist_group") or item.get_closest_marker("slow") else 1

    items.sort(key=long_first)
