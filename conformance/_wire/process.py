"""The stdio connection to an implementation under test: spawn, handshake, stderr, restart, close.

The implementation runs as a child process.  Its stdin and stdout carry the line-delimited JSON-RPC
protocol (:class:`~relavium_conformance._wire.jsonrpc.JsonRpcPeer`); its stderr is drained by a task of its
own into a bounded ring buffer of lines and is never read as protocol, so any amount of noise there
neither blocks the child nor disturbs a message.

On POSIX the child leads a process group of its own, so stopping it also stops what it spawned (an
``npx`` or a shell wrapper would otherwise leave its real server behind, holding our pipes).

Life of a connection::

    conn = SubprocessConnection("stdio:node adapter.js", handler=kit_callbacks)
    hello = await conn.start({"kit": "relavium-conformance"})   # hello handshake first
    result = await conn.peer.request("session.create", {...})
    ...                                    # after a PeerCrashed / PeerTimeout / ...:
    hello = await conn.restart()           # a fresh process, the same hello
    await conn.close()                     # bye, then terminate, then kill; never a zombie
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Final

from relavium_conformance._errors import KitUsageError
from relavium_conformance._version import PROTOCOL_VERSIONS
from relavium_conformance._wire.handshake import agree_protocol_version, has_batch_lines, spoken_versions
from relavium_conformance._wire.jsonrpc import (
    DEFAULT_LINE_LIMIT,
    PROTOCOL_VERSION,
    Handler,
    JsonObject,
    JsonRpcPeer,
    PeerClosed,
    ProtocolMismatch,
    RpcError,
    Validator,
)
from relavium_conformance._wire.reaper import MARK_VARIABLE, descendants, end_leftovers, marked, new_mark

__all__ = ["STDIO_PREFIX", "StderrTail", "SubprocessConnection", "parse_command"]

#: The prefix of an adapter spec that names a command to run over stdio.
STDIO_PREFIX: Final = "stdio:"

#: How many of the last stderr lines a crash reason quotes.
_REASON_STDERR_LINES: Final = 5
#: Longest stderr line kept, in characters (the rest of the line is dropped).
_STDERR_LINE_CHARS: Final = 2000
_STDERR_CHUNK: Final = 64 * 1024
_EXIT_POLL: Final = 0.02  # seconds between looks at the exit status while stopping
_POSIX: Final = sys.platform != "win32"


def parse_command(command: str | Sequence[str]) -> list[str]:
    """An argv list from a list (kept as is) or a string (``stdio:`` prefix optional, split as a shell
    would split words, with no shell run).  Raises :class:`KitUsageError` when nothing is left."""
    if isinstance(command, str):
        text = command.removeprefix(STDIO_PREFIX)
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise KitUsageError(f"cannot split the command {command!r}: {exc}") from exc
    else:
        argv = list(command)
    if not argv or not argv[0]:
        raise KitUsageError(f"the command {command!r} names no program")
    return argv


class StderrTail:
    """The last ``max_lines`` lines written to a stream, decoded leniently, each cut to a sane length."""

    def __init__(self, max_lines: int = 200) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._partial = bytearray()
        self._partial_cut = False
        self.finished = False

    def feed(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._keep(chunk[start:end])
            self._push()
            start = end + 1
        self._keep(chunk[start:])

    def _keep(self, piece: bytes) -> None:
        room = _STDERR_LINE_CHARS * 4 - len(self._partial)  # UTF-8: at most four bytes a character
        if len(piece) > room:
            self._partial_cut = True
        self._partial += piece[: max(room, 0)]

    def _push(self) -> None:
        line = self._decode()
        self._lines.append(line)
        self._partial.clear()
        self._partial_cut = False

    def _decode(self) -> str:
        text = self._partial.decode("utf-8", "replace").removesuffix("\r")
        if self._partial_cut or len(text) > _STDERR_LINE_CHARS:
            text = text[:_STDERR_LINE_CHARS] + " [cut]"
        return text

    def finish(self) -> None:
        """The stream ended: an unterminated last line counts as a line."""
        if self._partial:
            self._push()
        self.finished = True

    def lines(self) -> list[str]:
        """The kept lines, oldest first, including an unterminated last line."""
        tail = list(self._lines)
        if self._partial:
            tail.append(self._decode())
        return tail[-self._lines.maxlen :] if self._lines.maxlen else tail


async def _drain(stream: asyncio.StreamReader, tail: StderrTail) -> None:
    try:
        while chunk := await stream.read(_STDERR_CHUNK):
            tail.feed(chunk)
    finally:
        tail.finish()


async def _exited(process: asyncio.subprocess.Process, timeout: float) -> bool:
    """Wait up to ``timeout`` s for the child to exit.  ``process.wait()`` would also wait for every pipe
    to close, which a grandchild holding them could delay forever; the exit status comes first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while process.returncode is None and loop.time() < deadline:
        await asyncio.sleep(_EXIT_POLL)
    return process.returncode is not None


def _describe_returncode(code: int) -> str:
    if code >= 0:
        return f"the implementation exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = str(-code)
    return f"the implementation was killed by signal {name}"


class SubprocessConnection:
    """A restartable JSON-RPC connection to an implementation run as a child process.

    ``command``: an argv list, or a string split by :func:`parse_command` (``stdio:`` prefix allowed).
    ``handler`` and ``validate`` are given to every :class:`JsonRpcPeer` this connection creates.
    ``request_timeout`` is the peers' default per-request timeout (``None`` = wait forever);
    ``hello_timeout`` bounds the handshake, which sends ``protocol_version`` and agrees on one of
    ``protocol_versions`` (see :mod:`.handshake`; 1.0 gets no batch lines); ``close_timeout`` bounds
    each step of stopping the child (after ``bye``, after ``SIGTERM``); ``exit_wait`` is how long a
    crash reason waits for the exit code and the last stderr lines.  The hello and bye messages are
    plain dicts: this class knows nothing of the kit's message set beyond ``hello``'s
    ``protocolVersion``.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        handler: Handler | None = None,
        validate: Validator | None = None,
        request_timeout: float | None = 30.0,
        hello_timeout: float = 30.0,
        close_timeout: float = 2.0,
        exit_wait: float = 2.0,
        line_limit: int = DEFAULT_LINE_LIMIT,
        stderr_lines: int = 200,
        protocol_version: str = PROTOCOL_VERSION,
        protocol_versions: Sequence[str] = PROTOCOL_VERSIONS,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._argv = parse_command(command)
        self._handler = handler
        self._validate = validate
        self._request_timeout = request_timeout
        self._hello_timeout = hello_timeout
        self._close_timeout = close_timeout
        self._exit_wait = exit_wait
        self._line_limit = line_limit
        self._stderr_lines = stderr_lines
        self._protocol_version = protocol_version
        self._protocol_versions = tuple(protocol_versions)
        self._agreed: str | None = None
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._process: asyncio.subprocess.Process | None = None
        self._peer: JsonRpcPeer | None = None
        self._stderr = StderrTail(stderr_lines)
        self._stderr_task: asyncio.Task[None] | None = None
        self._hello_params: JsonObject | None = None
        self._hello_result: JsonObject | None = None
        self._restarts = 0
        self._mark = ""
        self._leftovers: list[str] = []
        self._live = False  # a child was spawned and not yet stopped
        self._closed = False

    # -- what the owner sees ----------------------------------------------------------------------

    @property
    def argv(self) -> list[str]:
        return list(self._argv)

    @property
    def peer(self) -> JsonRpcPeer:
        """The current peer (after a failure: the broken one, until :meth:`restart`)."""
        if self._peer is None:
            raise KitUsageError("the connection was never started")
        return self._peer

    @property
    def handler(self) -> Handler | None:
        """Serves the implementation's calls; setting it also updates the current peer."""
        return self._handler

    @handler.setter
    def handler(self, handler: Handler | None) -> None:
        self._handler = handler
        if self._peer is not None:
            self._peer.handler = handler

    @property
    def validate(self) -> Validator | None:
        """Checks every message both ways; setting it also updates the current peer."""
        return self._validate

    @validate.setter
    def validate(self, validate: Validator | None) -> None:
        self._validate = validate
        if self._peer is not None:
            self._peer.validate = validate

    @property
    def running(self) -> bool:
        """Whether a child process is up (it may still be misbehaving)."""
        return self._process is not None and self._process.returncode is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        """The exit status of the current (or last) child, ``None`` while it runs."""
        return self._process.returncode if self._process is not None else None

    @property
    def restarts(self) -> int:
        return self._restarts

    @property
    def protocol_version(self) -> str | None:
        """The protocol version agreed at the last successful ``hello`` (``None`` before one)."""
        return self._agreed

    @property
    def hello_result(self) -> JsonObject | None:
        """The implementation's answer to the last successful ``hello``."""
        return self._hello_result

    def take_leftovers(self) -> list[str]:
        """Notes on processes the implementation left running outside its process group (each ended by
        the kit when the child was stopped), since the last call; oldest first."""
        notes, self._leftovers = self._leftovers, []
        return notes

    def stderr_tail(self, lines: int | None = None) -> list[str]:
        """The last stderr lines of the current (or last) child, oldest first."""
        tail = self._stderr.lines()
        if lines is None:
            return tail
        return tail[-lines:] if lines > 0 else []

    # -- starting ---------------------------------------------------------------------------------

    async def start(self, hello_params: Mapping[str, Any] | None = None) -> JsonObject:
        """Spawn the child and shake hands; return the ``hello`` result.

        The request is ``hello`` with ``hello_params`` plus ``protocolVersion`` (the kit's) unless the
        params already carry one.  Raises :class:`~relavium_conformance._wire.jsonrpc.ProtocolMismatch`
        (a version the kit does not serve, or an error answer), ``MalformedMessage`` (no usable
        ``protocolVersion``), ``PeerTimeout``, ``PeerCrashed``; the child is stopped before any of these
        propagates, and :meth:`start` or :meth:`restart` may be tried again.  Raises
        :class:`KitUsageError` when the program cannot be executed, or the connection is already up.
        """
        if self._closed:
            raise PeerClosed("the connection was closed")
        if self._live:
            raise KitUsageError("the connection is already started; use restart()")
        params = dict(hello_params) if hello_params is not None else {}
        params.setdefault("protocolVersion", self._protocol_version)
        self._hello_params = params
        return await self._launch()

    async def restart(self) -> JsonObject:
        """Stop the current child (no ``bye``: it is presumed broken) and start a fresh one with the
        same ``hello``.  Raises as :meth:`start` does."""
        if self._closed:
            raise PeerClosed("the connection was closed")
        if self._hello_params is None:
            raise KitUsageError("restart() before start()")
        await self._stop(polite=False)
        self._restarts += 1
        return await self._launch()

    async def _launch(self) -> JsonObject:
        extra: dict[str, Any] = {"process_group": 0} if _POSIX else {}
        self._mark = new_mark()
        env = {**(self._env if self._env is not None else os.environ), MARK_VARIABLE: self._mark}
        try:
            process = await asyncio.create_subprocess_exec(
                *self._argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=self._line_limit,
                cwd=self._cwd,
                env=env,
                **extra,
            )
        except OSError as exc:
            raise KitUsageError(f"cannot run {self._argv[0]!r}: {exc.strerror or exc}") from exc
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
        if stdin is None or stdout is None or stderr is None:  # pragma: no cover - PIPE was asked for
            raise RuntimeError("the child's pipes are missing")
        tail = StderrTail(self._stderr_lines)
        self._process, self._stderr, self._live = process, tail, True
        self._stderr_task = asyncio.get_running_loop().create_task(_drain(stderr, tail))

        async def describe_exit() -> str:
            return await self._describe_exit(process, tail)

        self._peer = JsonRpcPeer(
            stdout,
            stdin,
            handler=self._handler,
            validate=self._validate,
            line_limit=self._line_limit,
            default_timeout=self._request_timeout,
            describe_eof=describe_exit,
        )
        try:
            self._hello_result = await self._hello(self._peer)
        except BaseException:
            await self._stop(polite=False)
            raise
        return self._hello_result

    async def _hello(self, peer: JsonRpcPeer) -> JsonObject:
        assert self._hello_params is not None
        try:
            result = await peer.request("hello", self._hello_params, timeout=self._hello_timeout)
        except RpcError as exc:
            raise ProtocolMismatch(
                f"the implementation refused hello (the kit speaks protocol "
                f"{spoken_versions(self._protocol_versions)}): "
                f"error {exc.code}: {exc.message}"
            ) from None
        agreed = agree_protocol_version(result, self._protocol_versions)
        self._agreed = agreed
        peer.batch_lines = has_batch_lines(agreed)  # 1.0 has no batch line: corked requests go one a line
        answer: JsonObject = result
        return answer

    async def _describe_exit(self, process: asyncio.subprocess.Process, tail: StderrTail) -> str:
        """Why the child's stdout ended: its exit status, if it comes soon, and its last stderr lines."""
        try:
            code: int | None = await asyncio.wait_for(process.wait(), self._exit_wait)
        except TimeoutError:
            code = None
        if self._stderr_task is not None and self._stderr is tail:
            await asyncio.wait({self._stderr_task}, timeout=self._exit_wait)
        status = (
            _describe_returncode(code)
            if code is not None
            else f"the implementation closed its stdout but is still running after {self._exit_wait:g} s"
        )
        lines = [line.strip() for line in tail.lines() if line.strip()][-_REASON_STDERR_LINES:]
        stderr = f"last stderr: {' | '.join(line[:200] for line in lines)}" if lines else "nothing on stderr"
        return f"{status}; {stderr}"

    # -- stopping ---------------------------------------------------------------------------------

    async def close(self) -> None:
        """Send ``bye``, give the child ``close_timeout`` to exit, then terminate it, then kill it.
        Idempotent; afterwards :meth:`start` and :meth:`restart` raise ``PeerClosed``."""
        if self._closed:
            return
        self._closed = True
        await self._stop(polite=True)

    async def _stop(self, *, polite: bool) -> None:
        """Stop the child within a bounded time: ``bye`` (when polite), then SIGTERM, then SIGKILL to its
        whole process group; then end what it left outside the group (see :mod:`.reaper`)."""
        process, peer, stderr_task = self._process, self._peer, self._stderr_task
        if process is None or not self._live:
            return
        self._live, self._stderr_task = False, None
        family = descendants(process.pid) if process.returncode is None else set()
        if peer is not None:
            if polite and peer.failure is None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(peer.notify("bye"), self._close_timeout)
            await peer.aclose()  # closes the child's stdin too (bounded)
        if polite:
            await _exited(process, self._close_timeout)
        if process.returncode is None:
            self._signal(process, signal.SIGTERM)
            await _exited(process, self._close_timeout)
        if process.returncode is None:
            self._signal(process, signal.SIGKILL if _POSIX else signal.SIGTERM)
            await _exited(process, self._close_timeout)
        if _POSIX:  # leftovers of the child's group (what it spawned) go too
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        self._end_leftovers(process.pid, family)
        # The exit is known; the transport finishes once every pipe is closed (nothing holds them now).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), self._close_timeout)
        if stderr_task is not None:
            await asyncio.wait({stderr_task}, timeout=self._close_timeout)
            stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stderr_task

    def _end_leftovers(self, leader: int, family: set[int]) -> None:
        """End the processes the child left outside its group (its group was killed already)."""
        outside: set[int] = set()
        for pid in (family | marked(self._mark)) - {leader}:
            with contextlib.suppress(OSError):
                if not _POSIX or os.getpgid(pid) != leader:
                    outside.add(pid)
        ended = end_leftovers(outside)
        if ended:
            many = len(ended) != 1
            self._leftovers.append(
                f"the implementation left {len(ended)} process{'es' if many else ''} running outside its "
                f"process group (pid {', '.join(map(str, ended))}); the kit ended {'them' if many else 'it'}"
            )

    @staticmethod
    def _signal(process: asyncio.subprocess.Process, signum: int) -> None:
        with contextlib.suppress(OSError):
            if _POSIX:
                os.killpg(process.pid, signum)
            elif signum == signal.SIGTERM:
                process.terminate()
            else:
                process.kill()

    async def __aenter__(self) -> SubprocessConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
