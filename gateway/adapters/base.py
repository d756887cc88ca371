"""The adapter interface: what the gate needs from anything that reaches a real tool.

An adapter lists its tool definitions, performs one call, and (optionally) answers whether an
earlier call happened. It classifies every outcome honestly: `succeeded` with a receipt,
`failed` (the destination said no), `not_sent` (nothing left the gateway: safe to retry), or
`unknown` (it may have happened). It never raises for a tool's failure; it raises only for
its own bugs, which the gate treats as `unknown` for writes.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain.units import reported_money


@dataclass(frozen=True)
class ToolDefinition:
    name: str  # the adapter's own name for the tool
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None = None
    timeout: float | None = None  # seconds; the gateway's default when None
    expose_as: str | None = None  # an alias when `<adapter>__<tool>` is too long
    # The JSON Schema its structured results conform to, shown in tools/list; clients validate a
    # success's structuredContent against it, so the gateway never reshapes such a result. Not part
    # of `sha256`: it does not change what a call sends, so no approval or pin depends on it.
    output_schema: dict[str, Any] | None = None

    def sha256(self) -> str:
        """The hash an approval binds to: a changed description or schema is another tool."""
        return sha256_hex(
            canonical_json({"name": self.name, "description": self.description, "input_schema": self.input_schema})
        )


@dataclass(frozen=True)
class CallRequest:
    tool: str  # the adapter's own name
    arguments: dict[str, Any]
    run_id: str
    action_id: str
    idempotency_key: str | None  # minted by the gateway for writes; the destination deduplicates on it
    timeout: float
    write: bool = True  # a read may be retried by the adapter within its timeout; a write never is
    # The tool has a retry policy: the gate retries, each attempt a ledger entry, so the adapter
    # makes one attempt and marks a transient end (`Outcome.transient`) instead of looping itself.
    one_attempt: bool = False


class OutcomeKind(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    NOT_SENT = "not_sent"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    content: list[dict[str, Any]] = field(default_factory=list)  # MCP content blocks
    structured: dict[str, Any] | None = None
    receipt: dict[str, Any] | None = None  # {id, status, digest}
    actual_spend: int | None = None  # minor units, when the destination reports a cost
    reported_cost: str | None = None  # the cost the destination reported: a decimal string in the policy currency
    code: str | None = None  # for failures: a stable code from DESIGN.md (upstream_failed, ...)
    message: str | None = None
    # A success whose result was over the gateway's cap: the bytes seen (at least), the body not kept.
    withheld: int | None = None
    # One attempt of a retried tool (CallRequest.one_attempt) that is worth asking again: the
    # transient code it ended in (upstream_unavailable, rate_limited), and the destination's
    # Retry-After in seconds when it sent one.
    transient: str | None = None
    retry_after: float | None = None

    def spend(self, currency: str) -> int | None:
        """The actual cost in minor units of `currency`, if the destination reported one (rounded up)."""
        if self.actual_spend is not None:
            return self.actual_spend
        if self.reported_cost is None:
            return None
        try:
            return reported_money(self.reported_cost, currency)
        except ValueError:
            return None  # the adapter checked it; a cost that is not an amount is no cost


PinMode = Literal["first_use", "manual"]
Listener = Callable[["Adapter"], Awaitable[None]]


class Adapter(abc.ABC):
    """One configured adapter. `name` matches `^[a-z][a-z0-9]{0,15}$`.

    An adapter whose definitions come from elsewhere (a downstream MCP server) sets `pin`: its
    tools are callable only while their definitions match the ones pinned in the store
    (`gateway/catalog/pins.py`). Definitions written in this gateway's own configuration are trusted.
    """

    name: str
    pin: PinMode | None = None  # None: the definitions are this gateway's own configuration
    trust_read_only_hint: bool = False  # a pinned readOnlyHint may make a policy without `effect` a read
    # The gateway's cap on a result (`limits.max_tool_result`), set before `start`: an adapter that
    # reads a body itself stops reading past it (None: the adapter's own bound).
    max_result_bytes: int | None = None

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Open connections, start supervising tasks. Called once by the gateway's lifespan."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release everything `start` took."""

    @abc.abstractmethod
    def definitions(self) -> list[ToolDefinition]:
        """The tools as they are now. May change at run time where the adapter calls its listeners."""

    def watch(self, listener: Listener) -> None:  # noqa: B027 - optional hook
        """Call `listener(self)` after each fresh listing of the definitions. Default: they never change."""

    def restore(self, definitions: Sequence[ToolDefinition]) -> None:  # noqa: B027 - optional hook
        """Definitions pinned earlier, served until the first listing (the destination may be down)."""

    @abc.abstractmethod
    async def call(self, request: CallRequest) -> Outcome: ...

    def destination(self, tool: str, arguments: Any) -> str:
        """Where a call of `tool` (the adapter's own name) with `arguments` goes, in a line an approver
        reads beside the payload. Never a secret: no credentials, no base URL (it may hold one)."""
        return f"tool {tool} of adapter {self.name}"

    def keyed(self, tool: str) -> bool:
        """Whether the destination of `tool` deduplicates writes on the gateway's idempotency key, so
        a write whose attempt may have acted can be sent again under the same key (docs/retries.md).
        False unless the adapter knows it."""
        return False

    async def lookup(self, request: CallRequest, dispatched_at: float, now: float) -> Outcome | None:
        """Did an earlier call with this idempotency key happen? None: cannot tell (stays unknown).

        `dispatched_at` and `now` are epoch seconds (the gateway's clock): "not done" is only
        believable once the call's own timeout has passed and while the destination still
        remembers the key.
        """
        return None

    async def revoke(self, run_id: str) -> None:  # noqa: B027 - optional hook
        """Revoke run-scoped credentials when a run is cancelled. Default: nothing to revoke."""

    def health(self) -> dict[str, Any]:
        """For /healthz, at once and without I/O: `{"status": "ok" | "degraded" | "down", ...}` with
        a few plain facts (a supervisor running, a connection up), never a secret or an error's text.
        Default: ok (nothing in the background)."""
        return {"status": "ok"}
