"""Every refusal and failure the gateway reports, with its stable code.

One tree, one base class. The `code` of each class is stable API: clients, harnesses and
acceptance checks branch on it. `retryable` says whether the same call may succeed later
without anyone changing anything (a busy store, a destination that is down), as opposed to
a refusal that needs a decision (an approval, a new lease, a bigger budget).

    WarrantError
    ├── Unauthenticated                 unauthenticated            (HTTP 401)
    ├── Forbidden                       forbidden                  (HTTP 403: role may not)
    ├── NotFound                        not_found                  (HTTP 404, also another tenant's)
    ├── InvalidRequest                  invalid_request / invalid_contract / payload_mismatch (400/409/422)
    │                                   approval_looser_than_policy (422, docs/policy.md)
    ├── DamagedRecord                   record_damaged (HTTP 500: a row changed behind the gateway's back)
    ├── Conflict                        lease_held / invalid_transition / approval_not_pending (409)
    │                                   successor_exists (names successor_run_id) / successor_of_child
    └── Refusal                         a tools/call the contract does not allow
        ├── tool_not_found, invalid_arguments, forbidden, constraint_violated
        ├── run_paused, run_waiting, run_cancelled, run_completed, run_expired
        ├── lease_superseded, lease_expired, lease_revoked
        ├── budget_exhausted (names the dimension)
        ├── approval_required, approval_denied, approval_expired
        ├── idempotency_conflict, operation_in_progress, outcome_unknown
        └── upstream_failed, upstream_unauthorized, upstream_unavailable, ...

Refusals carry `details`: extra, JSON-safe fields that reach the client inside
`structuredContent.error` (the dimension of an exhausted budget, the id of a pending approval).
A refusal's `message` is recorded with the rejected action; its `echo` (a piece of the caller's own
arguments, such as the value a constraint refused) is answered to the caller and never recorded,
so a purged payload leaves nothing of itself in the ledger. What each code's text names:
docs/refusals.md.
"""

from __future__ import annotations

from typing import Any, Self

# The codes a tools/call can be refused or failed with (DESIGN.md "Refusals and errors").
CALL_CODES: frozenset[str] = frozenset(
    {
        "unauthenticated",
        "tool_not_found",
        "invalid_arguments",
        "forbidden",
        "constraint_violated",
        "run_paused",
        "run_waiting",
        "run_cancelled",
        "run_completed",
        "run_expired",
        "lease_superseded",
        "lease_expired",
        # The API key that granted the lease was revoked (docs/decisions/0012-keys-and-roles.md).
        "lease_revoked",
        "budget_exhausted",
        "approval_required",
        "approval_denied",
        "approval_expired",
        "idempotency_conflict",
        "idempotency_expired",
        "operation_in_progress",
        "outcome_unknown",
        "upstream_failed",
        "upstream_unauthorized",
        "upstream_unavailable",
        "spec_version_mismatch",
        "tool_definition_changed",
        "rate_limited",
        "payload_too_large",
        # Verified progress (docs/progress.md): a stale checkpoint version; a completion the
        # gateway refuses, naming the milestones, unknown actions and live children in the way.
        "checkpoint_conflict",
        "completion_refused",
        # The gateway is shutting down (docs/operations.md): nothing was done; retry (another replica).
        "draining",
    }
)

# Operator-API codes of the lineage (docs/progress.md, "Successors"): not tools/call codes.
SUCCESSOR_EXISTS = "successor_exists"  # a terminal run has at most one successor; names it
SUCCESSOR_OF_CHILD = "successor_of_child"  # a child's budget went back to its parent when it ended

# Codes that say "try the same thing again later" without anybody deciding anything.
RETRYABLE_CODES: frozenset[str] = frozenset(
    {"operation_in_progress", "upstream_unavailable", "rate_limited", "run_waiting", "approval_required", "draining"}
)


class WarrantError(Exception):
    """Base of every error the gateway reports to a client or operator."""

    code: str = "internal_error"
    http_status: int = 500

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.details: dict[str, Any] = details

    @property
    def retryable(self) -> bool:
        return self.code in RETRYABLE_CODES

    def with_status(self, http_status: int) -> Self:
        """The same error, answered with another HTTP status (413 for a body too large, ...)."""
        self.http_status = http_status
        return self

    @property
    def answer(self) -> str:
        """The explanation the caller is answered with (the message; a refusal adds its echo)."""
        return self.message

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.answer, "retryable": self.retryable}
        for key, value in self.details.items():
            body.setdefault(key, value)
        return body

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class Unauthenticated(WarrantError):
    code = "unauthenticated"
    http_status = 401


class Forbidden(WarrantError):
    """The principal is known but its role may not do this."""

    code = "forbidden"
    http_status = 403


class NotFound(WarrantError):
    """No such object, or one that belongs to another tenant (they are not told apart)."""

    code = "not_found"
    http_status = 404


class InvalidRequest(WarrantError):
    """Malformed or invalid input: lists every problem in `details["problems"]`."""

    code = "invalid_request"
    http_status = 422


class Conflict(WarrantError):
    """The request is well formed but the object's state does not allow it now."""

    code = "conflict"
    http_status = 409


class Refusal(WarrantError):
    """A tools/call that the run's contract, lease, budget or approvals do not admit.

    Also used for operator requests refused by a run's state (HTTP 409): `run_cancelled` means
    the same thing to an agent and to an operator.
    """

    http_status = 409

    def __init__(self, code: str, message: str, *, echo: str | None = None, **details: Any) -> None:
        if code not in CALL_CODES:
            raise ValueError(f"unknown refusal code {code!r}")
        super().__init__(message, code=code, **details)
        self.echo = echo  # answered, never recorded: it quotes the caller's arguments

    @property
    def answer(self) -> str:
        return f"{self.message} ({self.echo})" if self.echo else self.message


class DamagedRecord(WarrantError):
    """A stored row the gateway cannot have written (a counter that is not an integer within its
    bound): changed behind its back. Lists and the watchdog pass over it, naming it in the log;
    reading it alone answers this."""

    code = "record_damaged"
    http_status = 500


class StoreError(WarrantError):
    """The store could not complete an operation (busy beyond its bound, schema too new)."""

    code = "store_unavailable"
    http_status = 503

    @property
    def retryable(self) -> bool:
        return True


class ConfigError(Exception):
    """A configuration, policy or adapter document is invalid. Stops start-up; never reaches a client."""
