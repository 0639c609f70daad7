"""The world the kit plays around one golden transcript: its provider, tools and host.

:class:`CaseWorld` answers every callback of one case deterministically from its script: the next
provider chunk, a tool result, an approval, the acknowledgement of an event, and before answering it
may first perform an operation (``do``) or never answer at all (``hold``).  Its collaborators answer
the governor and usage writer (``accounting_world.py``) and the compaction callbacks
(``compaction_world.py``); what it sees is kept in an :class:`Observation` for the judge.
``execute.py`` drives a case through it.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relavium_conformance._corpus.cases import (
    ApprovalStep,
    Case,
    DoStep,
    EditStep,
    HoldStep,
    OpStep,
    ProviderErrorStep,
    as_ops,
)
from relavium_conformance._data import parse_yaml
from relavium_conformance._errors import KitShapeError
from relavium_conformance._judge.judge import resting_on
from relavium_conformance._judge.matching import jsonable, match
from relavium_conformance._judge.observation import Observation
from relavium_conformance._judge.turns import marker_problem, refused_turn, turn_problem, turn_rows
from relavium_conformance._report.results import Difference, DifferenceForm
from relavium_conformance._run.accounting_world import AccountingWorld
from relavium_conformance._run.case_setup import resolve_saved, substitute
from relavium_conformance._run.compaction_world import CompactionWorld
from relavium_conformance._run.failures import failed_commit, failed_sink
from relavium_conformance._run.limits import CaseLimits, CaseMeter
from relavium_conformance._run.signals import Signals
from relavium_conformance._wire.adapters import Adapter
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.model import kit_parse
from relavium_conformance._wire.protocol import CALLBACKS, CASE_OPERATIONS, OperationError
from relavium_conformance._wire.protocol_messages import (
    HostAppendMarkerParams,
    HostCommitTurnParams,
    HostConfirmParams,
    HostCreateSessionParams,
    HostEmitParams,
    HostLoadSessionParams,
    HostRecordCostParams,
    HostSleepParams,
    ProviderNextParams,
    ProviderOpenParams,
    ToolCallParams,
)

__all__ = ["ANSWERING", "HISTORY_SESSION_ID", "CaseWorld"]

_CALLBACK_KEY: contextvars.ContextVar[int] = contextvars.ContextVar("relavium_callback_key", default=-1)
MAIN_SESSION = "main"
_SESSION: contextvars.ContextVar[str] = contextvars.ContextVar("relavium_case_session", default=MAIN_SESSION)
_KEYS = itertools.count()

HISTORY_SESSION_ID = "session-from-history"


@dataclass
class _Book:
    """One session of the case: the handle the kit names it by, what was observed of it, its create
    params."""

    handle: str
    observed: Observation
    create_params: dict[str, Any] = field(default_factory=dict)


class CaseWorld:
    """The provider, tools and host of one case; its collaborators answer the governor and usage writer
    (:class:`AccountingWorld`) and the compaction callbacks (:class:`CompactionWorld`), each reaching this
    world through its declared port; :class:`Signals` order answers."""

    def __init__(
        self,
        case: Case,
        adapter: Adapter,
        handle: str,
        workdir: str,
        timeout: float,
        limits: CaseLimits | None = None,
    ) -> None:
        self.case = case
        self.meter = CaseMeter(limits)
        self.adapter = adapter
        self.workdir = workdir
        self.timeout = timeout
        self.main = _Book(handle, Observation())
        self._books: dict[str, _Book] = {MAIN_SESSION: self.main}
        self.register: Callable[[str, Any], None] = lambda _handle, _world: None
        self._provider_calls = iter(case.provider)
        self._streams: dict[str, Iterator[Any]] = {}
        self._tools = iter(case.tools)
        self._approvals = iter(case.approvals)
        self._persist = iter(case.persist)
        self._event_counts: dict[str, int] = {}
        self._holds: list[asyncio.Future[None]] = []
        self._inflight: set[asyncio.Future[None]] = set()
        self._active: dict[int, bool] = {}  # callbacks being answered -> holding on purpose?
        self._opened = 0
        self.saved: dict[str, Any] = {}  # results kept by ``save_as``
        self.signals = Signals()
        self.accounting = AccountingWorld(case, self, self.signals)
        self.compaction = CompactionWorld(case, self)
        self._answerers = (self, self.accounting, self.compaction)

    # -- the case's sessions: each callback and each step acts on one -----------------------------

    @property
    def _book(self) -> _Book:
        return self._books.get(_SESSION.get(), self.main)

    @property
    def observed(self) -> Observation:
        """What was observed of the session the current callback or step belongs to."""
        return self._book.observed

    @property
    def handle(self) -> str:
        return self._book.handle

    @property
    def create_params(self) -> dict[str, Any]:
        return self._book.create_params

    @create_params.setter
    def create_params(self, value: dict[str, Any]) -> None:
        self._book.create_params = value

    def handles(self) -> list[str]:
        return [book.handle for book in self._books.values()]

    def others(self) -> dict[str, Observation]:
        return {name: book.observed for name, book in self._books.items() if book is not self.main}

    async def _open_session(self, name: str) -> None:
        """A step names a session the case has not opened yet: create it, beside the first one."""
        book = _Book(f"{self.main.handle}.{name}", Observation())
        book.create_params = {**self.main.create_params, "handle": book.handle}
        book.create_params.pop("sessionId", None)
        self._books[name] = book
        self.register(book.handle, self)
        created = await self.adapter.call("session.create", book.create_params, timeout=self.timeout)
        book.observed.session_id = str(created.get("sessionId")) if isinstance(created, dict) else None

    # -- the implementation calls the kit -------------------------------------------------------

    async def callback(self, method: str, params: dict[str, Any]) -> Any:
        """Answer one callback; while it runs it counts as active (unless it is holding on purpose)."""
        stop = self.meter.count(method, params)
        if stop is not None:
            raise RpcError(-32000, f"kit: {stop}")
        key = next(_KEYS)
        self._active[key] = False
        reset = _CALLBACK_KEY.set(key)
        owner = next((n for n, b in self._books.items() if b.handle == params.get("handle")), MAIN_SESSION)
        session = _SESSION.set(owner)
        try:
            return await self._answer(method, params)
        finally:
            _SESSION.reset(session)
            _CALLBACK_KEY.reset(reset)
            del self._active[key]

    async def _answer(self, method: str, params: dict[str, Any]) -> Any:
        """One lookup in the method table: parse the params once, then the row's world handler."""
        row = CALLBACKS.get(method)
        if row is None or row.answer is None:
            raise RpcError(-32601, f"method not found: {method}")
        try:
            parsed = kit_parse(row.params, params)
        except KitShapeError as exc:
            self.observed.violations.append(
                Difference(
                    path=method, message=f"{method} carried malformed params: {exc}", actual=jsonable(params)
                )
            )
            raise RpcError(-32602, f"invalid params: {exc.location or exc.message}") from None
        owner = next(part for part in self._answerers if hasattr(part, row.answer))
        handler: Callable[[Any], Awaitable[Any]] = getattr(owner, row.answer)
        return await handler(parsed)

    # -- the world's handlers (named by the method table) ---------------------------------------

    async def on_host_sleep(self, params: HostSleepParams) -> dict[str, Any]:
        self.observed.sleeps.append(float(params.seconds))
        return {}

    async def on_host_create_session(self, params: HostCreateSessionParams) -> dict[str, Any]:
        self.observed.record = params.record
        return {}

    async def on_host_load_session(self, params: HostLoadSessionParams) -> dict[str, Any]:
        return {"record": self.record_for_resume(self.create_params), "messages": self.observed.rows}

    async def on_host_record_cost(self, params: HostRecordCostParams) -> dict[str, Any]:
        self.observed.costs.append(params.cost or {})
        return {}

    async def on_host_commit_turn(self, params: HostCommitTurnParams) -> dict[str, Any]:
        """Play the host's atomic commit: check the turn's shape, then append all its rows or none."""
        turn = params.turn
        problem = turn_problem(turn)
        if problem is not None:
            self.observed.violations.append(refused_turn(len(self.observed.commits), turn, problem))
            raise RpcError(-32602, "the turn is not one whole exchange")
        answer = next(self._persist, None)
        self.observed.commits.append(turn)
        if answer is not None and answer.do is not None:
            await self.perform_together(as_ops(answer.do))
        if answer is not None and answer.fail:
            raise failed_commit(answer.fail)
        session_id = params.session_id
        for row in turn_rows(turn):
            self._append_row({**row, "sessionId": session_id})
        return {}

    async def on_host_append_marker(self, params: HostAppendMarkerParams) -> dict[str, Any]:
        """Play the host's marker write (scripted by ``markers``): a ``system`` row naming an earlier row."""
        await self.compaction.play_marker_answer()
        problem = marker_problem(params.marker, len(self.observed.rows))
        if problem is not None:
            self.observed.violations.append(
                Difference(
                    path=f"rows[{len(self.observed.rows)}]",
                    message=f"host.appendMarker carried an unusable boundary marker: {problem}",
                    actual=jsonable(params.marker),
                )
            )
            raise RpcError(-32602, "the boundary marker is not usable")
        self._append_row({**params.marker, "sessionId": params.session_id})
        return {}

    def _append_row(self, row: dict[str, Any]) -> None:
        number = len(self.observed.rows)
        row.setdefault("id", f"row-{number}")
        row["sequenceNumber"] = number
        row.setdefault("timestamp", "2026-01-01T00:00:00.000Z")
        self.observed.rows.append(row)

    def _read_export(self, path: str, where: str) -> None:
        """Read back the file an export wrote: its exact text and the data it parses to."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError:
            self.observed.differences.append(
                Difference(path=where, message="export wrote no file at the path")
            )
            return
        try:
            document = parse_yaml(text)
        except Exception:
            document = None
        self.observed.exports.append({"path": Path(path).name, "yaml": text, "document": document})

    def seed_history(self, session_id: str) -> None:
        history = self.case.setup.history
        if history is None:
            return
        for message in history.messages:
            self._append_row({"sessionId": session_id, **message})

    def record_for_resume(self, params: dict[str, Any]) -> dict[str, Any]:
        """The record the host hands to resume: the one the session persisted, else one from the setup."""
        base = self.observed.record or {
            "id": self.observed.session_id or HISTORY_SESSION_ID,
            "agentSlug": params["agent"]["id"],
            "context": params["context"],
            "status": "idle",
            "totalInputTokens": 0,
            "totalOutputTokens": 0,
            "totalCostMicrocents": 0,
            "createdAt": "2026-01-01T00:00:00.000Z",
            "updatedAt": "2026-01-01T00:00:00.000Z",
        }
        overrides = self.case.setup.history.record if self.case.setup.history else None
        return {**base, **(overrides or {})}

    async def on_provider_open(self, params: ProviderOpenParams) -> dict[str, Any]:
        if params.purpose == "summary":
            return await self.compaction.open_summary(params)
        steps = next(self._provider_calls, None)
        script = steps or ()
        edits = script[0].edit if script and isinstance(script[0], EditStep) else ()  # KD-PROJ-3
        stream = self.open_stream(script[1:] if edits else script)
        self.check_egress(params.request)
        opened = {"provider": params.provider, "model": params.model, "request": params.request}
        if params.window is not None:
            opened["window"] = params.window
        self.observed.provider_requests.append(opened)
        if steps is None:
            self.observed.violations.append(
                Difference(
                    path=f"provider_requests[{len(self.observed.provider_requests) - 1}]",
                    message=f"provider request #{len(self.observed.provider_requests)} was not scripted",
                    actual=jsonable(self.observed.provider_requests[-1]),
                    form=DifferenceForm.EXTRA,
                )
            )
        if edits:
            return {"stream": stream, "edits": [e.model_dump(mode="json", exclude_none=True) for e in edits]}
        return {"stream": stream}

    async def on_provider_next(self, params: ProviderNextParams) -> dict[str, Any]:
        steps = self._streams.get(params.stream)
        if steps is None:
            raise RpcError(-32602, "unknown stream")
        for step in steps:
            if isinstance(step, DoStep):
                await self.perform_together(as_ops(step.do))
                continue
            if isinstance(step, HoldStep):
                await self.hold()
            if isinstance(step, ProviderErrorStep):
                return {"chunk": step.seam_chunk()}
            return {"chunk": step}
        self.observed.violations.append(
            Difference(path=f"provider.next({params.stream})", message="pulled past its scripted end")
        )
        error = {"kind": "unknown", "message": "kit: the script has no further chunk"}
        return {"chunk": {"type": "error", "error": error}}

    async def on_tool_call(self, params: ToolCallParams) -> dict[str, Any]:
        self.observed.tool_calls.append({"name": params.name, "args": params.args, "callId": params.call_id})
        answer = next(self._tools, None)
        if answer is None:
            return {"text": f"result of {params.name}", "isError": False}
        self.signals.raise_signal(answer.signal)
        if answer.do is not None:
            await self.perform_together(as_ops(answer.do))
        if answer.hold:
            await self.hold()
        await self.signals.wait_signal(answer.after)
        self.signals.raise_signal(answer.then)
        return {"text": answer.text, "isError": answer.is_error}

    async def on_host_confirm(self, params: HostConfirmParams) -> dict[str, Any]:
        self.observed.confirms.append(
            {"toolId": params.tool_id, "action": params.action, "preview": dict(params.preview)}
        )
        answer = next(self._approvals, None)
        if answer is None:
            return {"approved": False}
        step = answer if isinstance(answer, ApprovalStep) else ApprovalStep(approve=answer)
        self.signals.raise_signal(step.signal)
        if step.do is not None:
            await self.perform_together(as_ops(step.do))
        if step.hold:
            await self.hold()
        await self.signals.wait_signal(step.after)
        self.signals.raise_signal(step.then)
        return {"approved": step.approve}

    async def on_host_emit(self, params: HostEmitParams) -> dict[str, Any]:
        event = params.event
        self.observed.events.append(event)
        self.accounting.check_publication(event)
        kind = str(event.get("type"))
        self._event_counts[kind] = self._event_counts.get(kind, 0) + 1
        failing: bool | str = False
        for hook in self.case.on_event:
            if hook.type == kind and hook.nth == self._event_counts[kind]:
                if hook.do is not None:
                    await self.perform_together(as_ops(hook.do))
                failing = failing or hook.fail
        if failing:
            raise failed_sink(failing)
        return {}

    def check_egress(self, request: dict[str, Any]) -> None:
        """The accounting's checks of a provider request as it leaves (admitted, pending acknowledged)."""
        self.accounting.check_egress(request)

    def open_stream(self, steps: Iterable[Any]) -> str:
        """Number a new provider stream and serve it ``steps`` on ``provider.next``; its name."""
        self._opened += 1
        stream = f"stream-{self._opened}"
        self._streams[stream] = iter(steps)
        return stream

    async def hold(self) -> None:
        """Never answer (a script's ``hold``): the case may end without this callback's answer."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._holds.append(future)
        key = _CALLBACK_KEY.get()
        if key in self._active:
            self._active[key] = True  # holding on purpose: the case may end without it
        await future

    def release_holds(self) -> None:
        for future in self._holds:
            future.cancel()

    # -- the kit calls the implementation -------------------------------------------------------

    async def perform_together(self, ops: list[OpStep]) -> None:
        """Issue ``ops`` at once, without waiting for one to answer before sending the next."""
        if len(ops) == 1:
            await self.perform(ops[0])
            return
        self.adapter.cork()
        try:
            tasks = [asyncio.ensure_future(self.perform(op)) for op in ops]
            for _ in range(3):
                await asyncio.sleep(0)  # each call reaches the wire (held by the cork)
        finally:
            await self.adapter.uncork()
        await asyncio.gather(*tasks)

    async def perform(self, op: OpStep) -> None:
        """Run one operation and check its result or refusal against the step's expectation."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._inflight.add(done)
        name = op.session or MAIN_SESSION
        session = _SESSION.set(name)
        try:
            if name not in self._books:
                await self._open_session(name)
            await self._perform(op)
        finally:
            _SESSION.reset(session)
            done.set_result(None)
            self._inflight.discard(done)

    async def settle(self) -> None:
        """Wait (bounded) until every callback has answered or is holding on purpose, and every
        operation it started has finished; then release the held callbacks."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(self.timeout, 5.0)
        while loop.time() < deadline and (self._inflight or not all(self._active.values())):
            await asyncio.sleep(0.002)
        self.release_holds()
        await asyncio.sleep(0)

    async def _perform(self, op: OpStep) -> None:
        steps = self.main.observed  # every step's result is listed in the case's order, by the first session
        index = len(steps.results)
        params: dict[str, Any] = {"handle": self.handle}
        if op.op == "send":
            params["text"] = op.text
        elif op.op == "setTurnPolicy":
            params["policy"] = op.policy
        elif op.op == "runUserCommand":
            params["command"] = substitute(op.command, self.workdir)
            params["args"] = substitute(list(op.args), self.workdir)
        elif op.op == "resume":
            params = {**self.create_params, "record": self.record_for_resume(self.create_params)}
            if op.agent is not None:  # a reseat: the same session on another model and its chain
                params["agent"] = {**params["agent"], **op.agent}
            params["messages"] = [dict(row) for row in self.observed.rows]
            if op.state is not None:
                params["state"] = op.state
            self.observed.instance_starts.append(len(self.observed.events))
        elif op.op == "export":
            params["workflowPath"] = str(Path(self.workdir) / (op.path or "export.relavium.yaml"))
        elif op.op == "trimHistory":
            params["maxMessages"] = op.max_messages
        elif op.op == "contextEstimate":
            params["text"] = op.text
        record: dict[str, Any] = {"op": op.op, **({"session": op.session} if op.session else {})}
        steps.results.append(record)
        where = f"steps[{index}]({op.op})"
        found = await self._call(op, params, record, where)
        steps.differences += resting_on(found, op.kit_defined) if op.kit_defined else found

    async def _call(
        self, op: OpStep, params: dict[str, Any], record: dict[str, Any], where: str
    ) -> list[Difference]:
        """Issue the step's operation; the differences between its answer and its expectation."""
        found: list[Difference] = []
        try:
            result = await self.adapter.call(CASE_OPERATIONS[op.op].name, params, timeout=self.timeout)
        except OperationError as error:
            record["error"] = error.to_observation()
            if op.expect_error is None:
                found.append(
                    Difference(path=where, message=f"unexpected refusal: {error}", expected="a result")
                )
            else:
                refusal = {**record["error"], "message": error.message}  # matchable, not snapshotted
                found.extend(match(op.expect_error, refusal, where + ".error"))
            return found
        record["result"] = result
        if op.save_as is not None:
            self.saved[op.save_as] = result
        if op.op == "export":
            self._read_export(params["workflowPath"], where)  # a missing file is the world's finding
        if op.expect_error is not None:
            found.append(
                Difference(
                    path=where,
                    message="expected a refusal",
                    expected=op.expect_error,
                    actual=jsonable(result),
                )
            )
        elif op.expect is not None:
            expected = resolve_saved(op.expect, self.saved)
            found.extend(match(expected, result, where + ".result"))
        return found


#: The classes whose ``on_*`` methods answer the implementation's callbacks (one per method-table row):
#: the case world and its collaborators.
ANSWERING: tuple[type, ...] = (CaseWorld, AccountingWorld, CompactionWorld)
