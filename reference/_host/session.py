"""``AgentSession``: the async shell around the lifecycle table and the turn core.

Every public method moves the session through :func:`relavium_reference._rules.lifecycle.apply`; what each
one raises and which state follows is stated on the method.  ``abort`` and ``cancel`` are signals:
they cancel the turn's own task, which no ``except Exception`` in the core can swallow, and the
session settles the turn from the outside with what the turn had recorded so far.

``abort`` and ``cancel`` must be called from outside the turn (another task, a host callback that
hands over to the host's own task); the kit's adapters do so.

The session owns its state and sequencing; three collaborators do the rest, each through a declared port
built in :mod:`relavium_reference._host.session_wiring`: its compactions
(:mod:`~relavium_reference._host.session_compaction`), the automatic triggers
(:mod:`~relavium_reference._host.auto_compaction`) and the turn's books
(:mod:`~relavium_reference._host.turn_books`).  The decisions themselves are pure, in ``_rules``: the
lifecycle table, the turn caps (``turn_cap``), the stream fold (``stream_fold``), the compaction plan.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Literal, NoReturn

from relavium_reference._host.attempt_deadline import bounded_resolver
from relavium_reference._host.auto_compaction import AutoCompaction
from relavium_reference._host.commands import run_command
from relavium_reference._host.compaction_runner import CompactionJob, CompactionReport
from relavium_reference._host.joint_commit import (
    JointWriter,
    publish_committed,
    resolve_abandoned,
)
from relavium_reference._host.persister import ReleasesWriter
from relavium_reference._host.session_compaction import SessionCompactions
from relavium_reference._host.session_deps import (
    DEFAULT_SESSION_MAX_TURNS,
    ExportResult,
    SessionDeps,
    TurnResult,
    check_session_arguments,
    check_session_deps,
    checked_session_id,
    resolve_max_turns,
    write_whole,
)
from relavium_reference._host.session_wiring import (
    auto_compaction_ports,
    books_ports,
    compaction_job,
    compaction_ports,
    turn_setup,
)
from relavium_reference._host.stamper import EventStamper, format_timestamp
from relavium_reference._host.turn import (
    TurnEnd,
    TurnProgress,
    TurnSetup,
    build_plan,
    error_message,
    turn_costs,
)
from relavium_reference._host.turn_books import TurnBooks
from relavium_reference._host.usage import SessionUsage, host_usage_writer
from relavium_reference._model.commands import (
    CommandAllowlist,
    CommandCancelled,
    CommandDenied,
    CommandFailed,
    CommandRan,
)
from relavium_reference._model.errors import InvalidInputError, SessionStateCode, SessionStateError
from relavium_reference._model.events import (
    CompactionReason,
    SessionCancelled,
    SessionExported,
    SessionStarted,
    SessionTrimmed,
    SessionTurnCompleted,
    SessionTurnStarted,
    TokensUsed,
    TurnError,
)
from relavium_reference._model.history_results import (
    BoundaryMarker,
    CompactionResult,
    MemoryPolicyRefusal,
    NothingToTrim,
    Trimmed,
    TrimResult,
)
from relavium_reference._model.messages import AgentSessionRecord, Compaction
from relavium_reference._model.messages import TextPart as DurableText
from relavium_reference._model.records import CostEntry, check_user_text
from relavium_reference._model.shapes import AgentSnapshot, MemoryPolicySpec, SessionContext
from relavium_reference._model.tools import TurnPolicy
from relavium_reference._model.vocabulary import (
    RETRYABLE_ERROR_CODES,
    ErrorCode,
    SessionStopReason,
)
from relavium_reference._model.workflow import document_to_data
from relavium_reference._rules.compaction_measure import EntryWindow, Measurement
from relavium_reference._rules.export_mapping import session_to_workflow
from relavium_reference._rules.lifecycle import Effect, Outcome, SessionInput, SessionState, apply
from relavium_reference._rules.memory import (
    automatic_compaction_allowed,
    compaction_refusal,
    copy_policy,
    resolve_memory,
    trim_refusal,
)
from relavium_reference._rules.projection import (
    Exchange,
    HistoryMemo,
    HistoryMessage,
    estimate_tokens,
    project_request,
)
from relavium_reference._rules.resume import (
    SessionResumeState,
    dropped_through_for_kept,
    exchanges_from_state,
    reconstruct_session_state,
    resume_state_problem,
)
from relavium_reference._rules.trim import TrimPlan, plan_trim
from relavium_reference._rules.turn_cap import cap_reached, check_max_tool_turns, slots_after
from relavium_reference._rules.workflow_yaml import dump_yaml

__all__ = [
    "DEFAULT_SESSION_MAX_TURNS",
    "AgentSession",
    "ExportResult",
    "SessionDeps",
    "TurnResult",
    "exchanges_from_state",
]


class AgentSession:
    """One instance of a session: one agent, one model and its fallback plan."""

    _state: SessionState = SessionState.CREATED
    """Changed only by :meth:`_enter`, from the lifecycle table's outcome."""

    def __init__(
        self,
        *,
        agent: AgentSnapshot,
        context: SessionContext,
        deps: SessionDeps,
        session_id: str | None = None,
        agent_ref: str | None = None,
    ) -> None:
        check_session_deps(deps)  # InvalidInputError naming the field: a dependency of the wrong type
        check_max_tool_turns(deps.max_tool_turns)
        check_session_arguments(agent, context, session_id, agent_ref)
        self._agent = agent
        self._context = context
        self._deps = deps  # the host's own object: what the session copies, it copies explicitly (below)
        # every provider attempt of a turn or a compaction runs within the session's attempt deadline
        self._resolve_provider = bounded_resolver(deps.resolve_provider, deps.attempt_deadline)
        self._max_turns = resolve_max_turns(deps.max_turns)
        self._max_tokens_estimate = deps.max_tokens_estimate  # frozen: later changes reach nothing
        self.session_id = session_id or checked_session_id(deps.new_id(), "newId")
        self._writer = host_usage_writer(deps.usage_writer, deps.persister, self.session_id, deps.prices)
        self._usage = SessionUsage(self._writer, basis="fresh")
        self._request_ids = (f"{self.session_id}/request-{n}" for n in itertools.count(1))
        self.agent_ref = agent_ref or agent.id
        self._plan = build_plan(agent)
        self._memory = resolve_memory(agent.memory)  # once per instance: fresh, resumed, reseated alike
        self._allowlist = CommandAllowlist(deps.allowed_commands, deps.allowed_command_globs)
        self._stamper = EventStamper(self.session_id, deps.emit, deps.clock)
        self._policy = TurnPolicy()
        self._exchanges: list[Exchange] = []
        self._turns_used = 0
        self._commands_run = 0
        self._interrupt: Literal["abort", "cancel"] | None = None
        self._progress: TurnProgress | None = None
        self._turn_task: asyncio.Task[TurnEnd] | None = None
        self._latched = False
        self._raw_commit_failure: BaseException | None = None
        self._preamble: str | None = None
        self._command_task: asyncio.Task[CommandRan | CommandDenied | CommandFailed | CommandCancelled] | None
        self._command_task = None
        self._trim_marker: asyncio.Task[None] | None = None  # a trim's marker write in flight
        self._histories = HistoryMemo()
        self._books = TurnBooks(books_ports(self))
        self._compactions = SessionCompactions(compaction_ports(self))
        self._auto = AutoCompaction(auto_compaction_ports(self))

    @classmethod
    def resume(
        cls,
        *,
        agent: AgentSnapshot,
        context: SessionContext,
        deps: SessionDeps,
        state: SessionResumeState,
        session_id: str,
        agent_ref: str | None = None,
    ) -> AgentSession:
        """A new instance continuing a persisted session, idle, with no ``session:started``.

        The state is checked first (span bounds and order, span roles, text-only messages); a state that
        fails is refused with ``invalid_resume_state`` before anything reaches the host.  The admitted
        state is copied: completed turns become the working transcript, retained legacy bare users keep
        their text and their own slot, and the hard cap continues from the reconstructed turn count.
        """
        problem = resume_state_problem(state)
        if problem is not None:
            raise SessionStateError(SessionStateCode.INVALID_RESUME_STATE, problem, state="created")
        session = cls(agent=agent, context=context, deps=deps, session_id=session_id, agent_ref=agent_ref)
        session._exchanges = exchanges_from_state(state)
        session._turns_used = state.turn_count
        session._preamble = state.context_preamble
        session._usage = SessionUsage(session._writer, basis="adopt")  # the existing owner, never zero
        session._enter(SessionInput.START)  # a resumed instance is started, without session:started
        return session

    # -- observation -----------------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def turns_used(self) -> int:
        """Slots of the hard turn cap used so far (provider-engaged turns only)."""
        return self._turns_used

    @property
    def max_turns(self) -> int:
        return self._max_turns

    @property
    def exchanges(self) -> tuple[Exchange, ...]:
        """The working transcript: completed exchanges, text only."""
        return tuple(self._exchanges)

    @property
    def turn_policy(self) -> TurnPolicy:
        return self._policy

    @property
    def memory_policy(self) -> MemoryPolicySpec:
        """The resolved memory policy, as a frozen copy (never the session's own value)."""
        return copy_policy(self._memory)

    @property
    def automatic_compaction_allowed(self) -> bool:
        """The policy's own permission for automatic compaction (no trigger or budget consulted)."""
        return automatic_compaction_allowed(self._memory)

    @property
    def compaction_refusal(self) -> MemoryPolicyRefusal | None:
        """Exactly the refusal ``compact`` returns under this policy, or ``None``."""
        return compaction_refusal(self._memory)

    @property
    def trim_refusal(self) -> MemoryPolicyRefusal | None:
        """Exactly the refusal ``trim_history`` returns under this policy, or ``None``."""
        return trim_refusal(self._memory)

    def context_estimate(self, pending_user: str) -> int:
        """The KD-COMP-2 token estimate of the next request for ``pending_user``.

        Computed on the one projection the request itself uses (same history selection, summary
        placement, tools and folding), so the two can never disagree.  ``InvalidInputError``: not a
        string, or holding a lone surrogate.
        """
        check_user_text(pending_user)
        projected = project_request(
            system=self._agent.system_prompt,
            history=self._history(),
            pending_user=pending_user,
            tools=self._deps.tools.definitions(self._advertised(self._policy)) or None,
        )
        return estimate_tokens(projected)

    # -- operations ------------------------------------------------------------------------------

    async def start(self) -> None:
        """created -> idle; emits ``session:started``. Refuses with ``already_started`` / ``not_active``."""
        apply(self._state, SessionInput.START)  # refuse before anything reaches the host
        if self._deps.persister is not None:
            await self._deps.persister.create_session(self._record())
        await self._usage.open()  # fresh creation alone: the complete-zero basis
        if self._state is not SessionState.CREATED:
            return  # cancelled while the host created the record: cancel is terminal
        self._enter(SessionInput.START)
        await self._stamper.emit(
            SessionStarted, agent_ref=self.agent_ref, model=self._agent.model, context=self._context
        )

    def set_turn_policy(self, policy: TurnPolicy | None) -> None:
        """Store the policy for the next turn start (any state); inert once cancelled.
        ``InvalidInputError``: neither a ``TurnPolicy`` nor ``None`` (nothing is stored)."""
        if policy is not None and not isinstance(policy, TurnPolicy):
            raise InvalidInputError("a turn policy must be a TurnPolicy or None", location="policy")
        outcome = self._enter(SessionInput.SET_TURN_POLICY)
        if outcome.effect is Effect.STORE_POLICY:
            self._policy = policy or TurnPolicy()

    def abort(self) -> None:
        """End the in-flight turn as ``aborted``; a no-op when no turn is in flight or it already resolved."""
        outcome = self._enter(SessionInput.ABORT)
        if outcome.effect is not Effect.ABORT_TURN:
            return
        if self._progress is not None and self._progress.resolved:
            return  # late: the turn already has its reply
        if self._interrupt is None:
            self._interrupt = "abort"
        if self._turn_task is not None and not self._turn_task.done():
            self._turn_task.cancel()

    async def cancel(self) -> None:
        """Terminal and idempotent: stop in-flight work, emit ``session:cancelled`` once."""
        outcome = self._enter(SessionInput.CANCEL)
        if outcome.effect is not Effect.CANCEL_WORK:
            return
        self._interrupt = "cancel"
        for task in (self._turn_task, self._command_task, self._compactions.task, self._trim_marker):
            if task is not None and not task.done():
                task.cancel()
        if isinstance(self._deps.persister, ReleasesWriter):  # the host may resume elsewhere (KD-DB-9)
            await self._deps.persister.release_writer(self.session_id)
        await self._stamper.emit(SessionCancelled)

    async def send_message(self, text: str) -> TurnResult:
        """Run one turn (idle -> streaming -> idle). Refuses ``not_started`` / ``busy`` / ``not_active``."""
        check_user_text(text)  # InvalidInputError: not a string, or a lone surrogate (UTF-8 cannot hold it)
        self._enter(SessionInput.SEND)
        self._interrupt = None
        progress = TurnProgress()
        self._progress = progress
        policy = self._policy  # snapshot: a change during this turn applies to the next one
        try:
            await self._stamper.emit(SessionTurnStarted)
            if self._interrupt is not None:
                return await self._settle_interrupted(progress)
            if cap_reached(self._turns_used, self._max_turns):
                return await self._settle(
                    TurnEnd(SessionStopReason.ERROR, error_code=ErrorCode.TURN_LIMIT), progress
                )
            if not await self._usage.opened():  # the accounting boundary: a resumed instance adopts here
                self._latched = True
                return await self._settle(
                    TurnEnd(SessionStopReason.ERROR, error_code=ErrorCode.INTERNAL), progress
                )
            self._turn_task = asyncio.create_task(self._turn_body(text, policy, progress))  # pre-send, turn
            await asyncio.wait({self._turn_task})
            task, self._turn_task = self._turn_task, None
            round_failure = await self._books.finish_round(progress)
            if task.cancelled() or self._interrupt is not None:
                failure = await self._record_uncommitted_cost(progress) or round_failure
                settled = await self._settle_interrupted(progress)
                if failure is not None:
                    raise failure  # the sink failed on a round's or the held-back cost, after the terminal
                return settled
            error = task.exception()
            if error is not None:  # an observer failed (never a provider: those are classified)
                await self._record_uncommitted_cost(progress)
                await self._raise_after_terminal(error, progress)
            end = task.result()
            if not end.succeeded:
                if (failure := await self._record_uncommitted_cost(progress)) is not None:
                    await self._raise_after_terminal(failure, progress)
                return await self._settle(end, progress)
            if not await self._commit(text, end, progress):
                failed = TurnEnd(SessionStopReason.ERROR, error_code=ErrorCode.INTERNAL)
                settled = await self._settle(failed, progress)
                if (raw := self._raw_commit_failure) is not None:
                    raise raw  # opaque: rejected as it came, after the fixed terminal (KD-MSG-6)
                return settled
            if self._interrupt != "cancel":  # a cancel during the commit: nothing is installed
                self._exchanges.append(Exchange(user=text, assistant=end.text or ""))  # the turn is durable
                if raised := await publish_committed(progress.committed, self._stamper, self.agent_ref):
                    await self._raise_after_terminal(raised, progress)
            settled = await self._settle(end, progress)
            await self._after_turn(progress, policy)
            return settled
        finally:
            self._progress = None
            if progress.accounting is not None:  # our caller was cancelled: the round's write still lands
                progress.accounting.detach()
            if self._turn_task is not None and not self._turn_task.done():
                self._turn_task.cancel()  # our caller was cancelled: do not leave the turn running
            self._turn_task = None
            if self._state is SessionState.STREAMING:
                self._enter(SessionInput.TURN_SETTLED)
            if (deferred := progress.deferred) is not None and (writer := self._usage.writer) is not None:
                progress.deferred = None  # our caller was cancelled before the commit: publish nothing
                self._latched |= not await resolve_abandoned(deferred, writer)

    async def export(self, workflow_path: str) -> ExportResult:
        """Write the session's workflow scaffold to ``workflow_path`` (idle only); emit ``session:exported``.

        The document is built from the host's persisted transcript (every completed turn, those behind
        a compaction or trim boundary included), deterministically; the file is written whole or not
        at all.  Refuses ``not_started`` / ``busy`` / ``not_active``; a session without a persister
        cannot export (``InvalidInputError``), nor can a path that is not a string.
        """
        if not isinstance(workflow_path, str):
            raise InvalidInputError("a workflow path must be a string", location="workflowPath")
        self._enter(SessionInput.EXPORT)
        persister = self._deps.persister
        if persister is None:
            raise InvalidInputError("export needs a host that keeps the transcript", location="persister")
        record, messages = await persister.load_transcript(self.session_id)
        document = session_to_workflow(record, messages)
        text = dump_yaml(document_to_data(document))
        await asyncio.to_thread(write_whole, workflow_path, text)
        await self._stamper.emit(SessionExported, workflow_path=workflow_path)
        return ExportResult(workflow_id=document.workflow.id, workflow_path=workflow_path)

    async def run_user_command(
        self, command: str, args: Sequence[str] = ()
    ) -> CommandRan | CommandDenied | CommandFailed | CommandCancelled:
        """Run a user's ``!`` command (idle only; the session is idle again afterwards).
        ``InvalidInputError``: the command is not a string, or ``args`` not a sequence of strings."""
        if (
            not isinstance(command, str)
            or not isinstance(args, list | tuple)
            or not all(isinstance(a, str) for a in args)
        ):
            raise InvalidInputError("a command and its arguments must be strings", location="command")
        self._enter(SessionInput.RUN_USER_COMMAND)
        self._commands_run += 1
        task = asyncio.create_task(
            run_command(
                command,
                list(args),
                allowlist=self._allowlist,
                policy=self._policy,
                cwd=self._context.working_dir,
                call_id=f"usercmd-{self._commands_run}",
                latched=self._latched,
                output_limit=self._deps.command_output_limit,
            )
        )
        self._command_task = task
        try:
            await asyncio.wait({task})
        finally:
            self._command_task = None
            if not task.done():
                task.cancel()
            if self._state is SessionState.COMMAND:
                self._enter(SessionInput.COMMAND_SETTLED)
        if task.cancelled():
            return CommandCancelled()
        return task.result()

    async def trim_history(self, max_messages: int, reason: Literal["manual"] = "manual") -> TrimResult:
        """Keep the newest whole slots within ``max_messages`` message units (started and idle only).

        Order: a lifecycle refusal (``SessionStateError``), then the memory policy's refusal, then the
        bound (``InvalidInputError``) and ``nothing_to_trim``; none of these changes anything.  A trim
        that drops history appends one boundary marker through the host's persister, installs the kept
        suffix and emits ``session:trimmed``; it never calls a provider.  Before all of these, a
        ``max_messages`` that is not an integer or a ``reason`` other than ``manual`` is refused with
        ``InvalidInputError``.
        """
        if type(max_messages) is not int:  # bool is an int subclass, never a bound
            raise InvalidInputError("a trim bound must be an integer", location="maxMessages")
        if reason != "manual":
            raise InvalidInputError("a manual trim's reason is manual", location="reason")
        self._enter(SessionInput.TRIM)  # idle -> history: nothing races the trim
        try:
            return await self._trim(max_messages, reason)
        finally:
            if self._state is SessionState.HISTORY:
                self._enter(SessionInput.HISTORY_SETTLED)

    async def _trim(self, max_messages: int, reason: Literal["manual", "auto-fallback"]) -> TrimResult:
        refusal = trim_refusal(self._memory)
        if refusal is not None:
            return refusal
        plan = self._select_trim(max_messages)
        if not plan.drops_anything:
            return NothingToTrim(message_count=plan.total_messages)
        result = Trimmed(
            kept_message_count=plan.kept_messages,
            dropped_message_count=plan.dropped_messages,
            kept_turn_count=plan.kept_slots,
        )
        if not await self._write_trim_marker(plan.kept_slots):
            return result  # the session was cancelled while the host held the marker: nothing more
        kept = self._exchanges[len(self._exchanges) - plan.kept_slots :]
        self._exchanges = kept  # surviving whole slots; their spans start again at 0
        if self._state is not SessionState.CANCELLED:
            await self._stamper.emit(
                SessionTrimmed,
                reason=reason,
                kept_message_count=plan.kept_messages,
                dropped_message_count=plan.dropped_messages,
                kept_turn_count=plan.kept_slots,
            )
        return result

    async def _write_trim_marker(self, kept_slots: int) -> bool:
        """Hand the trim's marker to the host in a task the session's ``cancel`` cancels (a cancel waits
        for no write, as with a compaction's marker); ``False`` when that cancel ended the wait.  The
        host's own failure propagates; a caller cancelled here abandons the write too."""
        marker = asyncio.create_task(self._append_boundary(kept_slots))
        self._trim_marker = marker
        try:
            await asyncio.wait({marker})
        except asyncio.CancelledError:
            marker.cancel()
            await asyncio.wait({marker})
            raise
        finally:
            self._trim_marker = None
        if marker.cancelled() and self._state is SessionState.CANCELLED:
            return False
        marker.result()  # the host's failure (or its own cancellation) reaches the caller
        return True

    # -- compaction (the work is the collaborators'; each step stays a method a session may refine) ------

    async def compact(self, reason: Literal["manual"] = "manual") -> CompactionResult:
        """Summarise the older working context (started and idle only); see
        :meth:`~relavium_reference._host.session_compaction.SessionCompactions.compact`.
        ``InvalidInputError``: a ``reason`` other than ``manual``."""
        if reason != "manual":
            raise InvalidInputError("a manual compaction's reason is manual", location="reason")
        return await self._compactions.compact(reason)

    async def run_compaction(
        self, reason: CompactionReason, *, pending_user: str | None = None, manual: bool = False
    ) -> CompactionReport:
        """Run one compaction now (the runner pre-send, after-turn and overflow recovery call)."""
        return await self._compactions.run(reason, pending_user=pending_user, manual=manual)

    @property
    def _compaction_task(self) -> asyncio.Task[CompactionReport] | None:
        """The compaction running now, if any."""
        return self._compactions.task

    def _compaction_job(
        self, reason: CompactionReason, *, manual: bool, pending_user: str | None
    ) -> CompactionJob:
        return compaction_job(self, reason, manual=manual, pending_user=pending_user)

    def _history(self) -> Sequence[HistoryMessage]:
        """Selection and summary placement of the working transcript (before any folding), projected
        afresh only when the slots changed otherwise than by appending (see ``HistoryMemo``)."""
        return self._histories.project(self._exchanges, self._memory, self._preamble)

    def _automatic_allowed(self) -> bool:
        return self._auto.allowed()

    def _entry_windows(self) -> list[EntryWindow]:
        return self._auto.entry_windows()

    def _automatic_measurement(
        self, pending_user: str | None, progress: TurnProgress, policy: TurnPolicy
    ) -> Measurement | None:
        return self._auto.measurement(pending_user, progress, policy)

    def _irreducible(self, pending_user: str, policy: TurnPolicy) -> int:
        return self._auto.irreducible(pending_user, policy)

    async def _turn_body(self, text: str, policy: TurnPolicy, progress: TurnProgress) -> TurnEnd:
        return await self._auto.turn_body(text, policy, progress)

    async def _presend(self, text: str, policy: TurnPolicy, progress: TurnProgress) -> TurnEnd | None:
        return await self._auto.presend(text, policy, progress)

    async def _after_turn(self, progress: TurnProgress, policy: TurnPolicy) -> None:
        await self._auto.after_turn(progress, policy)

    # -- internals -------------------------------------------------------------------------------

    def _select_trim(self, max_messages: int) -> TrimPlan:
        return plan_trim([exchange.message_units for exchange in self._exchanges], max_messages)

    def _advertised(self, policy: TurnPolicy) -> tuple[str, ...]:
        registry = self._deps.tools
        return tuple(
            name for name in self._agent.tools if registry.get(name) is not None and policy.advertises(name)
        )

    async def _append_boundary(self, kept_slots: int, text: str | None = None) -> None:
        """Write the boundary marker that keeps the newest ``kept_slots`` durable slots (with the summary
        ``text`` of a compaction; a trim's marker has none).

        The boundary is read from the host's own rows (the durable view is the authority on sequence
        numbers): the last row of the newest dropped slot.  A session without a persister writes none.
        """
        persister = self._deps.persister
        if persister is None:
            return
        record, rows = await persister.load_transcript(self.session_id)
        durable = reconstruct_session_state(record, rows)
        through = dropped_through_for_kept(durable, kept_slots)
        if through is None:
            return
        content = (DurableText(text=text),) if text else ()
        marker = BoundaryMarker(content=content, compaction=Compaction(dropped_through_sequence=through))
        await persister.append_marker(self.session_id, marker)

    def _enter(self, event: SessionInput) -> Outcome:
        """The one place the state changes (the table's outcome); a refusal raises and changes nothing."""
        outcome = apply(self._state, event)
        self._state = outcome.next_state
        return outcome

    def _turn_setup(self, text: str, policy: TurnPolicy) -> TurnSetup:
        return turn_setup(self, text, policy)

    def _record(self) -> AgentSessionRecord:
        now = format_timestamp(self._deps.clock.now())
        return AgentSessionRecord.model_validate(
            {
                "id": self.session_id,
                "agentSlug": self.agent_ref,
                "agentSnapshot": self._agent.to_wire(),
                "context": self._context.to_wire(),
                "status": "active",
                "totalInputTokens": 0,
                "totalOutputTokens": 0,
                "totalCostMicrocents": 0,
                "createdAt": now,
                "updatedAt": now,
            }
        )

    def _costs(self, progress: TurnProgress) -> tuple[CostEntry, ...]:
        return turn_costs(progress)  # a hook: a selftest break overrides it

    async def _commit(self, text: str, end: TurnEnd, progress: TurnProgress) -> bool:
        """Hand the completed turn to the host's persister; a failure latches the session."""
        return await self._books.commit(text, end, progress)

    async def _raise_after_terminal(self, failure: BaseException, progress: TurnProgress) -> NoReturn:
        """An observer (the event sink) failed: the INTERNAL terminal, then its error, raised as it came."""
        await self._settle(TurnEnd(SessionStopReason.ERROR, error_code=ErrorCode.INTERNAL), progress)
        raise failure

    def _joint(self) -> JointWriter | None:
        return self._books.joint()

    async def _record_uncommitted_cost(self, progress: TurnProgress) -> Exception | None:
        """Errors and aborts commit no transcript, but what they spent is recorded (answers a sink error)."""
        return await self._books.record_uncommitted(progress)

    def _count_turn(self, progress: TurnProgress) -> None:
        """Only a provider-engaged turn uses a slot of the hard cap."""
        self._turns_used = slots_after(self._turns_used, engaged=progress.engaged)

    def _tokens(self, progress: TurnProgress) -> TokensUsed:
        if not progress.engaged:
            return TokensUsed(input=0, output=0)
        return TokensUsed(
            input=progress.usage.input_tokens, output=progress.usage.output_tokens, model=progress.model
        )

    async def _settle_interrupted(self, progress: TurnProgress) -> TurnResult:
        self._count_turn(progress)
        if self._interrupt == "cancel":
            return TurnResult(status="cancelled", tokens_used=self._tokens(progress))
        self._enter(SessionInput.TURN_SETTLED)
        tokens = self._tokens(progress)
        await self._stamper.emit(
            SessionTurnCompleted, stop_reason=SessionStopReason.ABORTED, tokens_used=tokens
        )
        return TurnResult(status="aborted", stop_reason=SessionStopReason.ABORTED, tokens_used=tokens)

    async def _settle(self, end: TurnEnd, progress: TurnProgress) -> TurnResult:
        """Publish the single terminal of a turn that ended on its own; cancel still wins."""
        self._count_turn(progress)
        tokens = self._tokens(progress)
        if self._interrupt == "cancel":
            return TurnResult(status="cancelled", tokens_used=tokens)
        error = None
        if end.error_code is not None:
            error = TurnError(
                code=end.error_code,
                message=end.error_message or error_message(end.error_code),
                retryable=end.error_code in RETRYABLE_ERROR_CODES,
            )
        history = tuple(progress.tool_history) or None
        self._enter(SessionInput.TURN_SETTLED)
        await self._stamper.emit(
            SessionTurnCompleted,
            stop_reason=end.stop_reason,
            tokens_used=tokens,
            error=error,
            tool_history=history,
        )
        status: Literal["completed", "failed"] = "completed" if end.succeeded else "failed"
        return TurnResult(
            status=status, stop_reason=end.stop_reason, text=end.text, tokens_used=tokens, error=error
        )
