"""The adapter interface: what the gate needs from anything that reaches a real tool.

An adapter lists its tool definitions, performs one call, and (optionally) answers whether an
earlier call happened. It classifies every outcome honestly: `succeeded` with a receipt,
`failed` (the destination said no), `not_sent` (nothing left the gateway: safe to retry), or
`unknown` (it may have happened). It never raises for a tool's failure; it raises only for
its own bugs, which the gate treats as `unknown` for writes.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gateway.canonical import canonical_json, sha256_hex


@dataclass(frozen=True)
class ToolDefinition:
    name: str  # the adapter's own name for the tool
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None = None
    timeout: float | None = None  # seconds; the gateway's default when None
    expose_as: str | None = None  # an alias when `<adapter>__<tool>` is too long

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
    code: str | None = None  # for failures: a stable code from DESIGN.md (upstream_failed, ...)
    message: str | None = None


class Adapter(abc.ABC):
    """One configured adapter. `name` matches `^[a-z][a-z0-9]{0,15}$`."""

    name: str

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Open connections, start supervising tasks. Called once by the gateway's lifespan."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release everything `start` took."""

    @abc.abstractmethod
    def definitions(self) -> list[ToolDefinition]: ...

    @abc.abstractmethod
    async def call(self, request: CallRequest) -> Outcome: ...

    async def lookup(self, request: CallRequest, dispatched_at: float) -> Outcome | None:
        """Did an earlier call with this idempotency key happen? None: cannot tell (stays unknown)."""
        return None

    async def revoke(self, run_id: str) -> None:  # noqa: B027 - optional hook
        """Revoke run-scoped credentials when a run is cancelled. Default: nothing to revoke."""
