"""The seams around one provider invocation: model metadata, the invocation's purpose, admission.

Data and ports only, no I/O.

* :class:`ModelInfo` is what the host knows of a model: its authoritative context window (``None``:
  unknown or custom) and whether its provider manages its own context.  A session gets one per model
  name (``SessionDeps.models``); a model it has none for is unknown.
* :class:`Invocation` says what an invocation is for (``turn`` or ``summary``) and with which window the
  engine measured it.  A provider that wants to know implements :class:`InvocationAwareProvider`;
  :func:`open_stream` hands it over, any other provider gets the plain ``stream(request)`` call.
* :class:`Admission` is the port every provider attempt passes before it may egress (a turn attempt, a
  tool round, a retry, a summary pass).  :data:`ALWAYS_ADMIT` is the default: it admits everything and
  releases nothing.  A budget governor replaces it (the budget issue fills this seam).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from relavium_reference._model.errors import InvalidInputError
from relavium_reference._model.llm import LlmProvider, LlmRequest, StreamChunk

__all__ = [
    "ALWAYS_ADMIT",
    "UNKNOWN_MODEL",
    "Admission",
    "AdmissionRefused",
    "AdmissionRequest",
    "Admitted",
    "AlwaysAdmit",
    "EstimatingProvider",
    "Invocation",
    "InvocationAwareProvider",
    "InvocationPurpose",
    "ModelInfo",
    "check_admission_answer",
    "open_stream",
]

InvocationPurpose = Literal["turn", "summary"]


@dataclass(frozen=True)
class ModelInfo:
    """Model metadata: the context window when it is authoritative, and self-managed context."""

    context_window: int | None = None
    """Tokens; ``None`` (or a size that is not positive) means unknown or custom."""
    self_managed: bool = False
    """The provider manages its own context: automatic compaction never runs for it."""

    @property
    def authoritative_window(self) -> int | None:
        """The window to measure against, or ``None`` when there is none (KD-COMP-2)."""
        if self.context_window is None or self.context_window <= 0:
            return None
        return self.context_window


UNKNOWN_MODEL = ModelInfo()


@dataclass(frozen=True)
class Invocation:
    """What one provider invocation is for, as the engine sees it (KD-COMP-6)."""

    purpose: InvocationPurpose
    window: int | None
    """The attempted entry's authoritative window, ``None`` when unknown."""


@runtime_checkable
class InvocationAwareProvider(Protocol):
    """A provider that is told what each invocation is for (the kit's provider, for one)."""

    def stream_invocation(
        self, request: LlmRequest, invocation: Invocation
    ) -> AsyncIterator[StreamChunk]: ...


def open_stream(
    provider: LlmProvider, request: LlmRequest, invocation: Invocation
) -> AsyncIterator[StreamChunk]:
    """Invoke ``provider`` for ``request``: with the invocation's purpose when it wants it."""
    if isinstance(provider, InvocationAwareProvider):
        return provider.stream_invocation(request, invocation)
    return provider.stream(request)


@runtime_checkable
class EstimatingProvider(Protocol):
    """A provider with its own token estimator (used for the prospective history of a compaction)."""

    async def estimate_tokens(self, request: LlmRequest) -> int: ...


@dataclass(frozen=True)
class AdmissionRequest:
    """One provider attempt asking to egress."""

    purpose: InvocationPurpose
    provider: str
    model: str
    input_tokens: int
    """The KD-COMP-2 estimate of the request as built."""
    output_reservation: int
    attempt: int
    """1-based attempt number within its operation (a turn, or one compaction)."""
    request_id: str = ""
    """The identity of this attempt's request, unique within the session (KD-FIN-2)."""
    round: int = 0
    """0 for an operation's first request, then one more per tool round."""
    request: LlmRequest | None = None
    """Exactly what will be sent when admitted (after any reasoning stripping)."""
    max_tokens_estimate: int | None = None
    """The session's frozen ``maxTokensEstimate`` fallback."""


@dataclass(frozen=True)
class Admitted:
    kind: Literal["admitted"] = "admitted"


@dataclass(frozen=True)
class AdmissionRefused:
    """The budget refuses the attempt: nothing egresses. ``message`` is a fixed, safe text naming the cap."""

    message: str
    kind: Literal["refused"] = "refused"


class Admission(Protocol):
    """The admission port: asked before every provider attempt; told when an admission goes unused."""

    async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused: ...

    async def release(self, request: AdmissionRequest) -> None:
        """An admitted attempt that will never egress (cancelled before its call) gives its admission back."""
        ...


class AlwaysAdmit:
    """The default admission: every attempt is admitted; releasing is a no-op."""

    async def admit(self, request: AdmissionRequest) -> Admitted | AdmissionRefused:
        return Admitted()

    async def release(self, request: AdmissionRequest) -> None:
        return None


ALWAYS_ADMIT = AlwaysAdmit()


def check_admission_answer(value: object) -> Admitted | AdmissionRefused:
    """``value`` when it is an answer ``Admission.admit`` may give: :class:`Admitted`, or
    :class:`AdmissionRefused` with a string message.  Anything else raises :class:`InvalidInputError` where
    the answer arrives: the operation that asked (a turn, a compaction) ends with that error, as with an
    admission that raised, and nothing egresses (an unreadable answer is never taken as a yes)."""
    if isinstance(value, Admitted):
        return value
    if isinstance(value, AdmissionRefused):
        if not isinstance(value.message, str):
            raise InvalidInputError("an admission refusal's message must be a string", location="admission")
        return value
    raise InvalidInputError("an admission answer must be Admitted or AdmissionRefused", location="admission")
