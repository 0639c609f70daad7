"""Pieces the breaks of several clause areas are built from: session and provider doubles, and the
wrappers that turn an edit into a replacement pure function.  No break is registered here.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from relavium_conformance._reference.impl import ReferenceImplementation
from relavium_conformance._selftest.wire_variants import WireVariant
from relavium_conformance._wire.jsonrpc import RpcError
from relavium_conformance._wire.protocol import SESSION_STATE_ERROR, Callback
from relavium_reference import AgentSession, TurnPolicy
from relavium_reference._host.admission import UsageWriter
from relavium_reference._host.compaction_runner import CompactionJob
from relavium_reference._host.dialect_client import HttpProvider
from relavium_reference._host.session import SessionDeps
from relavium_reference._host.turn import TurnSetup
from relavium_reference._model.events import CompactionReason, SessionEvent
from relavium_reference._model.invocation import Admission, AdmissionRefused, AdmissionRequest, Admitted
from relavium_reference._model.messages import AgentSessionRecord, SessionMessage, ToolCallPart
from relavium_reference._rules.resume import SessionResumeState, reconstruct_session_state

__all__ = [
    "Answers",
    "Document",
    "Governor",
    "JobEdit",
    "Observed",
    "ProviderRequests",
    "Reconstruct",
    "RefusalCodesRenamed",
    "ResumeCleansRows",
    "WrappedSession",
    "answer_rows",
    "bending_jobs",
    "by_sequence",
    "forgetting",
    "handle_root",
    "refusal_error",
    "request_messages",
    "shielded",
    "state_with",
    "strip_calls",
    "with_http_provider",
]


Document = dict[str, Any]


def by_sequence(messages: Sequence[SessionMessage]) -> list[SessionMessage]:
    return sorted(messages, key=lambda message: message.sequence_number)


class Governor:
    """A governor wrapper: forwards to the session's own port unless the break says otherwise."""

    def __init__(self, inner: Admission) -> None:
        self.inner = inner

    async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
        return await self.inner.admit(request)

    async def release(self, request: AdmissionRequest) -> None:
        await self.inner.release(request)


class WrappedSession(AgentSession):
    """A session whose turn gets a wrapped governor and writer (the hooks the breaks override)."""

    def governor(self, inner: Admission) -> Admission:
        return inner

    def writer(self, inner: UsageWriter) -> UsageWriter:
        return inner

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        setup = super()._turn_setup(text, policy)
        usage = None if setup.usage is None else self.writer(setup.usage)
        return replace(setup, admission=self.governor(setup.admission), usage=usage)


JobEdit = Callable[[CompactionJob], None]
"""The one port a compaction-job break fills: it changes, in place, the job a session built before
the compaction runner sees it."""


def bending_jobs(edit: JobEdit) -> type[AgentSession]:
    """The reference session with every compaction job it builds changed by ``edit`` first."""

    class JobBent(AgentSession):
        def _compaction_job(
            self, reason: CompactionReason, *, manual: bool, pending_user: str | None
        ) -> CompactionJob:
            job = super()._compaction_job(reason, manual=manual, pending_user=pending_user)
            edit(job)
            return job

    JobBent.__qualname__ = JobBent.__name__ = f"JobBent{edit.__name__}"
    return JobBent


def shielded(step: Callable[[], Any], late: dict[str, bool]) -> Any:
    """Await ``step()`` through a cancel (recording it in ``late``) instead of being interrupted."""

    async def run() -> Any:
        future = asyncio.ensure_future(step())
        while True:
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError:
                if future.done():
                    raise
                late["cancel"] = True
                asyncio.current_task().uncancel()  # type: ignore[union-attr]

    return run()


def forgetting(job: CompactionJob, late: dict[str, bool]) -> None:
    cancelled = job.cancelled
    job.cancelled = lambda: False if late["cancel"] else cancelled()


def with_http_provider(provider: type[HttpProvider]) -> type[ReferenceImplementation]:
    return type(f"Reference{provider.__name__}", (ReferenceImplementation,), {"http_provider": provider})


Reconstruct = Callable[[AgentSessionRecord, Sequence[SessionMessage]], SessionResumeState]


def state_with(
    edit: Callable[[SessionResumeState, Sequence[SessionMessage]], SessionResumeState],
) -> Reconstruct:
    def answer(record: AgentSessionRecord, messages: Sequence[SessionMessage]) -> SessionResumeState:
        return edit(reconstruct_session_state(record, messages), messages)

    return answer


def strip_calls(message: SessionMessage) -> SessionMessage:
    content = tuple(part for part in message.content if not isinstance(part, ToolCallPart))
    return message.model_copy(update={"content": content})


class Observed(AgentSession):
    """A base: sees every event the session hands its sink (:meth:`seen`), and whether the sink failed."""

    def __init__(self, *, deps: SessionDeps, **kwargs: Any) -> None:
        sink = deps.emit
        self.sink_failed = False

        async def emit(event: SessionEvent) -> None:
            try:
                acknowledged = sink(event)
                if acknowledged is not None:
                    await acknowledged
            except Exception:
                self.sink_failed = True
                raise
            await self.seen(event)

        super().__init__(deps=replace(deps, emit=emit), **kwargs)

    async def seen(self, event: SessionEvent) -> None:
        return None


def handle_root(handle: str) -> str:
    return handle.split(".", 1)[0]


def refusal_error(code: str) -> RpcError:
    return RpcError(SESSION_STATE_ERROR, f"refused ({code})", {"kind": "session_state", "code": code})


class ProviderRequests(WireVariant):
    """A base: edits the request handed to the provider (``provider.open``)."""

    def __init__(self, callback: Any, **options: Any) -> None:
        super().__init__(callback, **options)
        self.opened: dict[str, int] = {}
        self.resumed: set[str] = set()

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            self.resumed.add(str(params.get("handle")))
        return await super().operation(method, params)

    def outgoing(self, handle: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "provider.open" and isinstance(params.get("request"), dict):
            self.opened[handle] = self.opened.get(handle, 0) + 1
            self.request(handle, params)
        return params

    def request(self, handle: str, params: dict[str, Any]) -> None:
        return None


def request_messages(params: dict[str, Any]) -> list[dict[str, Any]]:
    messages = params["request"].get("messages")
    return messages if isinstance(messages, list) else []


class RefusalCodesRenamed(WireVariant):
    """Answers one refusal code with another (a wrong code where the spec names one)."""

    renamed: dict[str, str] = {}
    methods: tuple[str, ...] = ()

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await super().operation(method, params)
        except RpcError as exc:
            code = exc.data.get("code") if isinstance(exc.data, dict) else None
            if method in self.methods and code in self.renamed:
                raise refusal_error(self.renamed[code]) from None
            raise


class Answers(WireVariant):
    """A base that may change the answer of a callback before the engine reads it (:meth:`answer`)."""

    def __init__(self, callback: Callback, **options: Any) -> None:
        async def answered(method: str, params: dict[str, Any]) -> Any:
            answer = await callback(method, params)
            return self.answer(str(params.get("handle")), method, copy.deepcopy(answer))

        super().__init__(answered, **options)

    def answer(self, handle: str, method: str, answer: Any) -> Any:
        return answer


class ResumeCleansRows(WireVariant):
    """A base: resume tidies the rows it was handed (:meth:`clean`) instead of refusing them."""

    async def operation(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session.resume":
            params = {**params, "messages": [self.clean(dict(row)) for row in params.get("messages") or ()]}
        return await super().operation(method, params)

    def clean(self, row: dict[str, Any]) -> dict[str, Any]:
        return row


def answer_rows(answer: Any) -> list[dict[str, Any]]:
    messages = answer.get("messages") if isinstance(answer, dict) else None
    return [row for row in messages or () if isinstance(row, dict)]
