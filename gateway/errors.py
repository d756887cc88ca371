"""Every refusal and failure the gateway reports, with its stable code.

One tree, one base class, one enum of codes (`Code`). The `code` of each error is stable API:
clients, harnesses and acceptance checks branch on it, and the gateway's own code compares it with
the enum (`exc.code is Code.LEASE_HELD`), never with a string. `retryable` says whether the same
call, sent again unchanged, may succeed later because what it waits for is under way (a busy
store, a destination that is down, the approval it requested), as opposed to one that needs
someone to do or decide something nobody was asked to (other arguments, a new lease, a bigger
budget): it is defined once, by RETRYABLE_CODES (docs/errors.md, "Retryable"). `ErrorBody` is an
error as the value it answers.

    WarrantError
    ├── Unauthenticated                 unauthenticated            (HTTP 401)
    ├── Forbidden                       forbidden                  (HTTP 403: role may not)
    │                                   not_an_approver (403: the rule names who decides)
    ├── NotFound                        not_found                  (HTTP 404, also another tenant's)
    ├── InvalidRequest                  invalid_request / invalid_contract / payload_mismatch (400/409/422)
    │                                   approval_looser_than_policy (422, docs/policy.md)
    │                                   retries_looser_than_policy (422, docs/retries.md)
    ├── DamagedRecord                   record_damaged (HTTP 500: a row changed behind the gateway's back)
    ├── Conflict                        lease_held / invalid_transition / approval_not_pending (409)
    │                                   successor_exists (names successor_run_id) / successor_of_child
    └── Refusal                         a tools/call the contract does not allow
        ├── tool_not_found, invalid_arguments, forbidden, constraint_violated
        ├── run_paused, run_waiting, run_cancelled, run_completed, run_expired, run_failed
        ├── lease_superseded, lease_expired, lease_revoked
        ├── budget_exhausted (names the dimension)
        ├── approval_required, approval_denied, approval_expired
        ├── idempotency_conflict, operation_in_progress, outcome_unknown
        ├── upstream_failed, upstream_unauthorized, upstream_unavailable, ...
        ├── contract_revised (revised twice while one call was decided: retryable)
        ├── shared_limit (a tool's or destination's limit shared by every run: retryable, retry_after_s)
        └── plan_* and task_* (docs/tasks.md): plan_invalid, plan_conflict, invalid_task_transition, ...
    StoreError                          store_unavailable (HTTP 503, retryable)

Refusals carry `details`: extra, JSON-safe fields that reach the client inside
`structuredContent.error` (the dimension of an exhausted budget, the id of a pending approval).
A refusal's `message` is recorded with the rejected action; its `echo` (a piece of the caller's own
arguments, such as the value a constraint refused) is answered to the caller and never recorded,
so a purged payload leaves nothing of itself in the ledger. What each code's text names:
docs/refusals.md; the operator API's codes: docs/errors.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Self


class Code(StrEnum):
    """Every code the gateway answers with: a member is its wire string (`Code.RUN_PAUSED ==
    "run_paused"`, and JSON writes it as that string). The tools/call codes are CALL_CODES and
    docs/refusals.md; the operator API's (and the CLI's own) docs/errors.md."""

    # -- tools/call (DESIGN.md "Refusals and errors"; docs/refusals.md) -------------------------
    UNAUTHENTICATED = "unauthenticated"
    TOOL_NOT_FOUND = "tool_not_found"
    INVALID_ARGUMENTS = "invalid_arguments"
    FORBIDDEN = "forbidden"
    CONSTRAINT_VIOLATED = "constraint_violated"
    RUN_PAUSED = "run_paused"
    RUN_WAITING = "run_waiting"
    RUN_CANCELLED = "run_cancelled"
    RUN_COMPLETED = "run_completed"
    RUN_EXPIRED = "run_expired"
    # The run failed: an operator's fail, or the contract's rules (docs/decisions/0024-failed-end.md).
    RUN_FAILED = "run_failed"
    LEASE_SUPERSEDED = "lease_superseded"
    LEASE_EXPIRED = "lease_expired"
    # The API key that granted the lease was revoked (docs/decisions/0012-keys-and-roles.md).
    LEASE_REVOKED = "lease_revoked"
    BUDGET_EXHAUSTED = "budget_exhausted"
    APPROVAL_REQUIRED = "approval_required"
    APPROVAL_DENIED = "approval_denied"
    APPROVAL_EXPIRED = "approval_expired"
    # A person approved an edited version of this payload: the answer carries the approved arguments
    # (docs/decisions/0032-approve-edited.md).
    APPROVAL_EDITED = "approval_edited"
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"
    IDEMPOTENCY_EXPIRED = "idempotency_expired"
    OPERATION_IN_PROGRESS = "operation_in_progress"
    OUTCOME_UNKNOWN = "outcome_unknown"
    UPSTREAM_FAILED = "upstream_failed"
    UPSTREAM_UNAUTHORIZED = "upstream_unauthorized"
    UPSTREAM_UNAVAILABLE = "upstream_unavailable"
    SPEC_VERSION_MISMATCH = "spec_version_mismatch"
    # The run's contract was revised twice while one call was being decided: nothing was done.
    CONTRACT_REVISED = "contract_revised"
    TOOL_DEFINITION_CHANGED = "tool_definition_changed"
    RATE_LIMITED = "rate_limited"
    # A tool's or destination's limit shared by every run (docs/limits.md, "Shared limits").
    SHARED_LIMIT = "shared_limit"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    # Verified progress (docs/progress.md): a stale checkpoint version; a completion the gateway
    # refuses, naming the milestones, unknown actions and live children in the way.
    CHECKPOINT_CONFLICT = "checkpoint_conflict"
    COMPLETION_REFUSED = "completion_refused"
    # The run's plan and tasks (docs/tasks.md): a plan that does not hold together, a stale plan
    # version, a revision past the contract's bound or budget, a write before any plan; a task
    # move outside the transition table, a completion whose checks fail, a task out of attempts,
    # a tool call naming a task the plan does not have or that is not running.
    PLAN_INVALID = "plan_invalid"
    PLAN_CONFLICT = "plan_conflict"
    PLAN_REVISION_LIMIT = "plan_revision_limit"
    PLAN_OVER_BUDGET = "plan_over_budget"
    PLAN_REQUIRED = "plan_required"
    INVALID_TASK_TRANSITION = "invalid_task_transition"
    TASK_CHECK_FAILED = "task_check_failed"
    TASK_ATTEMPTS_EXHAUSTED = "task_attempts_exhausted"
    UNKNOWN_TASK = "unknown_task"
    TASK_NOT_RUNNING = "task_not_running"
    # Waits (docs/decisions/0027-waits.md).
    WAIT_INVALID = "wait_invalid"
    WAIT_OPEN = "wait_open"
    # Retry policies (docs/decisions/0030-retries.md): an operation id whose failed attempts reached
    # the tool's max_attempts is given up to a dead letter; an operator decides what becomes of it.
    RETRY_LIMIT = "retry_limit"
    # Compensation (docs/decisions/0031-compensation.md).
    NOT_COMPENSABLE = "not_compensable"
    COMPENSATION_MAPPING = "compensation_mapping"
    # The gateway is shutting down (docs/operations.md): nothing was done; retry (another replica).
    DRAINING = "draining"

    # -- the operator API (docs/errors.md) ------------------------------------------------------
    INTERNAL_ERROR = "internal_error"
    NOT_FOUND = "not_found"
    INVALID_REQUEST = "invalid_request"
    INVALID_CONTRACT = "invalid_contract"
    INVALID_JSON = "invalid_json"
    INVALID_CURSOR = "invalid_cursor"
    APPROVAL_LOOSER_THAN_POLICY = "approval_looser_than_policy"
    RETRIES_LOOSER_THAN_POLICY = "retries_looser_than_policy"
    AMOUNT_OUT_OF_RANGE = "amount_out_of_range"
    CONFLICT = "conflict"
    INVALID_TRANSITION = "invalid_transition"
    LEASE_HELD = "lease_held"
    RUN_NOT_TERMINAL = "run_not_terminal"
    DEADLINE_PASSED = "deadline_passed"
    # The lineage (docs/progress.md, "Successors").
    SUCCESSOR_EXISTS = "successor_exists"  # a terminal run has at most one successor; names it
    SUCCESSOR_OF_CHILD = "successor_of_child"  # a child's budget went back to its parent when it ended
    REVISION_CONFLICT = "revision_conflict"
    SPEC_VERSION_UNCHANGED = "spec_version_unchanged"
    WIDENING_REQUIRES_ADMIN = "widening_requires_admin"
    APPROVAL_NOT_PENDING = "approval_not_pending"
    # The approval's rule names its approvers and the principal is not one (docs/decisions/0029-approvals-reach.md).
    NOT_AN_APPROVER = "not_an_approver"
    # An approver's edited payload that the run could not call (schema, policy, contract, a stricter
    # approval rule): nothing was decided (docs/decisions/0032-approve-edited.md).
    EDIT_OUTSIDE_AUTHORITY = "edit_outside_authority"
    PAYLOAD_MISMATCH = "payload_mismatch"
    NOT_PINNED = "not_pinned"
    KEY_IN_CONFIG = "key_in_config"
    KEY_NAME_TAKEN = "key_name_taken"
    KEY_NOT_ACTIVE = "key_not_active"
    TENANT_MISMATCH = "tenant_mismatch"
    RECORD_DAMAGED = "record_damaged"
    NOT_IMPLEMENTED = "not_implemented"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    INVALID_HOST = "invalid_host"
    STORE_UNAVAILABLE = "store_unavailable"
    # /healthz: why a check is down.
    HEALTH_CHECK_FAILED = "health_check_failed"
    WATCHDOG_STALLED = "watchdog_stalled"
    # Sign-in (docs/oidc.md), the console's forms, OAuth for MCP clients (docs/authorization.md).
    OIDC_UNAVAILABLE = "oidc_unavailable"
    OIDC_TOKEN_INVALID = "oidc_token_invalid"
    OIDC_CODE_REFUSED = "oidc_code_refused"
    OIDC_CLAIM_MISSING = "oidc_claim_missing"
    OIDC_STATE_MISMATCH = "oidc_state_mismatch"
    OIDC_NOT_ALLOWED = "oidc_not_allowed"
    OIDC_DENIED = "oidc_denied"
    CSRF_FAILED = "csrf_failed"
    CONSENT_EXPIRED = "consent_expired"
    INVALID_GRANT = "invalid_grant"
    OAUTH_CLIENTS_FULL = "oauth_clients_full"
    OAUTH_GRANTS_FULL = "oauth_grants_full"
    SIGNAL_INVALID = "signal_invalid"  # a signal's name, payload or key (docs/decisions/0027-waits.md)

    # -- the CLI's own, before or without the gateway's answer (docs/errors.md) ----------------
    UNREACHABLE = "unreachable"
    EXPORT_INCOMPLETE = "export_incomplete"
    INVALID_RESPONSE = "invalid_response"
    UNREADABLE = "unreadable"
    UNAVAILABLE = "unavailable"
    PAYLOAD_UNAVAILABLE = "payload_unavailable"


# The codes a tools/call can be refused or failed with (DESIGN.md "Refusals and errors"), each in
# docs/refusals.md's table; every other member is the operator API's (docs/errors.md).
CALL_CODES: frozenset[Code] = frozenset(
    {
        Code.UNAUTHENTICATED,
        Code.TOOL_NOT_FOUND,
        Code.INVALID_ARGUMENTS,
        Code.FORBIDDEN,
        Code.CONSTRAINT_VIOLATED,
        Code.RUN_PAUSED,
        Code.RUN_WAITING,
        Code.RUN_CANCELLED,
        Code.RUN_COMPLETED,
        Code.RUN_EXPIRED,
        Code.RUN_FAILED,
        Code.LEASE_SUPERSEDED,
        Code.LEASE_EXPIRED,
        Code.LEASE_REVOKED,
        Code.BUDGET_EXHAUSTED,
        Code.APPROVAL_REQUIRED,
        Code.APPROVAL_DENIED,
        Code.APPROVAL_EXPIRED,
        Code.APPROVAL_EDITED,
        Code.IDEMPOTENCY_CONFLICT,
        Code.IDEMPOTENCY_EXPIRED,
        Code.OPERATION_IN_PROGRESS,
        Code.OUTCOME_UNKNOWN,
        Code.UPSTREAM_FAILED,
        Code.UPSTREAM_UNAUTHORIZED,
        Code.UPSTREAM_UNAVAILABLE,
        Code.SPEC_VERSION_MISMATCH,
        Code.CONTRACT_REVISED,
        Code.TOOL_DEFINITION_CHANGED,
        Code.RATE_LIMITED,
        Code.SHARED_LIMIT,
        Code.PAYLOAD_TOO_LARGE,
        Code.CHECKPOINT_CONFLICT,
        Code.COMPLETION_REFUSED,
        Code.PLAN_INVALID,
        Code.PLAN_CONFLICT,
        Code.PLAN_REVISION_LIMIT,
        Code.PLAN_OVER_BUDGET,
        Code.PLAN_REQUIRED,
        Code.INVALID_TASK_TRANSITION,
        Code.TASK_CHECK_FAILED,
        Code.TASK_ATTEMPTS_EXHAUSTED,
        Code.UNKNOWN_TASK,
        Code.TASK_NOT_RUNNING,
        Code.WAIT_INVALID,
        Code.WAIT_OPEN,
        Code.RETRY_LIMIT,
        Code.NOT_COMPENSABLE,
        Code.COMPENSATION_MAPPING,
        Code.DRAINING,
    }
)

# The one definition of `retryable`: the same request may succeed later without anybody deciding
# anything (docs/errors.md, "Retryable"; each code marked so in docs/refusals.md and docs/errors.md).
RETRYABLE_CODES: frozenset[Code] = frozenset(
    {
        Code.OPERATION_IN_PROGRESS,
        Code.UPSTREAM_UNAVAILABLE,
        Code.RATE_LIMITED,
        Code.SHARED_LIMIT,
        Code.RUN_WAITING,
        Code.APPROVAL_REQUIRED,
        Code.CONTRACT_REVISED,
        Code.DRAINING,
        Code.STORE_UNAVAILABLE,
    }
)


@dataclass(frozen=True)
class ErrorBody:
    """What an error answers, as a value: the `error` object of a refused tools/call's
    `structuredContent` (and of the few answers built without an exception: the drain's 503, the
    stdio bridge's own). `retryable` follows from the code (RETRYABLE_CODES), never given.

    (The name `Refusal` stays the exception's: every pure decision returns one, and they are
    raised and caught as such; docs/errors.md.)"""

    code: Code
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)
    retryable: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", Code(self.code))
        object.__setattr__(self, "retryable", self.code in RETRYABLE_CODES)

    def to_dict(self) -> dict[str, Any]:
        """`{code, message, retryable, ...details}`: a detail never overwrites the first three."""
        body: dict[str, Any] = {"code": self.code, "message": self.message, "retryable": self.retryable}
        for key, value in self.details.items():
            body.setdefault(key, value)
        return body


class WarrantError(Exception):
    """Base of every error the gateway reports to a client or operator."""

    code: Code = Code.INTERNAL_ERROR
    http_status: int = 500

    def __init__(self, message: str, *, code: Code | None = None, **details: Any) -> None:
        super().__init__(message)
        if code is not None:
            self.code = Code(code)
        self.message = message
        self.details: dict[str, Any] = details

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later as it is: its code is in RETRYABLE_CODES."""
        return self.code in RETRYABLE_CODES

    def with_status(self, http_status: int) -> Self:
        """The same error, answered with another HTTP status (413 for a body too large, ...)."""
        self.http_status = http_status
        return self

    @property
    def answer(self) -> str:
        """The explanation the caller is answered with (the message; a refusal adds its echo)."""
        return self.message

    @property
    def body(self) -> ErrorBody:
        """This error as the value it answers: its code, its answer, retryable, its details."""
        return ErrorBody(self.code, self.answer, self.details)

    def to_dict(self) -> dict[str, Any]:
        return self.body.to_dict()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code.value!r}, message={self.message!r})"


class Unauthenticated(WarrantError):
    code = Code.UNAUTHENTICATED
    http_status = 401


class Forbidden(WarrantError):
    """The principal is known but its role may not do this."""

    code = Code.FORBIDDEN
    http_status = 403


class NotFound(WarrantError):
    """No such object, or one that belongs to another tenant (they are not told apart)."""

    code = Code.NOT_FOUND
    http_status = 404


class InvalidRequest(WarrantError):
    """Malformed or invalid input: lists every problem in `details["problems"]`."""

    code = Code.INVALID_REQUEST
    http_status = 422


class Conflict(WarrantError):
    """The request is well formed but the object's state does not allow it now."""

    code = Code.CONFLICT
    http_status = 409


class Refusal(WarrantError):
    """A tools/call that the run's contract, lease, budget or approvals do not admit.

    Also used for operator requests refused by a run's state (HTTP 409): `run_cancelled` means
    the same thing to an agent and to an operator.
    """

    http_status = 409

    def __init__(self, code: Code, message: str, *, echo: str | None = None, **details: Any) -> None:
        if code not in CALL_CODES:
            raise ValueError(f"unknown refusal code {code!r}")
        super().__init__(message, code=Code(code), **details)
        self.echo = echo  # answered, never recorded: it quotes the caller's arguments

    @property
    def answer(self) -> str:
        return f"{self.message} ({self.echo})" if self.echo else self.message


class DamagedRecord(WarrantError):
    """A stored row the gateway cannot have written (a counter that is not an integer within its
    bound): changed behind its back. Lists and the watchdog pass over it, naming it in the log;
    reading it alone answers this."""

    code = Code.RECORD_DAMAGED
    http_status = 500


class StoreError(WarrantError):
    """The store could not complete an operation (busy beyond its bound, schema too new)."""

    code = Code.STORE_UNAVAILABLE  # retryable, as every code in RETRYABLE_CODES
    http_status = 503


class ConfigError(Exception):
    """A configuration, policy or adapter document is invalid. Stops start-up; never reaches a client."""
