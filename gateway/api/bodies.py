"""Every request body the operator API validates, one model each: the routes read them with
`read_model` (gateway/api/routes.py) and the OpenAPI document (gateway/api/openapi.py) states them,
so neither module imports the other's. Responses are gateway/api/schemas.py.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator, model_validator

from gateway.api.audit import parse_time
from gateway.domain.roles import Role
from gateway.text import NOTE_MAX, control_character

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")  # an API key's name (the principal's)
Duration = StrictStr | StrictInt
MAX_LISTED = 500  # the most connections one page lists (GET /api/runs/{id}/connections)


# -- runs, leases, approvals, usage (gateway/api/routes.py) -------------------------------------


class LeaseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    worker: str = Field(min_length=1, max_length=128)
    takeover: bool = False
    held: bool = Field(
        False,
        description=(
            "the lease the gateway holds for this key on this run (what /mcp/runs/{run_id} uses): the same "
            "token on every request while it holds; after a takeover it stays dead unless `takeover` is set"
        ),
    )


class ControlBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str | None = Field(None, max_length=2000)
    hard: bool = False


class FailBody(BaseModel):
    """`POST /api/runs/{id}/fail`: why the operator ends the run failed (kept as its cause)."""

    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=2000)


class DeadLetterBody(BaseModel):
    """`POST /api/dead-letters/{id}/retry|resolve|drop`: why the operator decides so (recorded)."""

    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=2000)


class ResolveBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: Literal["succeeded", "failed"]
    evidence: str = Field(min_length=1, max_length=4000)
    receipt_id: str | None = Field(None, min_length=1, max_length=256)
    actual_spend: str | None = Field(None, max_length=32)
    # The effect happened more than once (the operator found two): the report's duplicate_effects.
    duplicate: bool = False


class AcknowledgeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str = Field(min_length=1, max_length=4000)


class CompensateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=512)


class DecisionBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str | None = Field(
        None,
        max_length=NOTE_MAX,
        description="recorded with the decision; a denial's note is the message the model reads, verbatim "
        "(no control characters but line feeds)",
    )
    expected_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    arguments: dict[str, Any] | None = Field(
        None,
        description="approve only: the edited payload to approve instead of the proposal, checked against the "
        "tool's schema and the run's authority; the approval binds its hash (docs/decisions/0032-approve-edited.md)",
    )

    @field_validator("note")
    @classmethod
    def _no_control_characters(cls, note: str | None) -> str | None:
        if note is not None and control_character(note) is not None:
            raise ValueError("a note may hold no control characters but line feeds (a model reads it)")
        return note


class UsageBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["model", "runtime"]
    amount: str = Field(min_length=1, max_length=32, description='a decimal string in the run\'s currency: "0.42"')
    note: str | None = Field(None, max_length=2000)
    ref: str | None = Field(
        None, min_length=1, max_length=128, description="the reporter's reference: a retry with it is charged once"
    )


class SignalBody(BaseModel):
    """`POST /api/runs/{id}/signal`: an outside event for the run (docs/decisions/0027-waits.md)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9_.:-]{1,64}$", description="what happened; a wait's wake_on names it")
    payload: Any = Field(None, description="any JSON, at most 16 KB as canonical JSON: the agent reads it")
    idempotency_key: str = Field(
        pattern=r"^[A-Za-z0-9_.:-]{1,128}$", description="a retry with it is recorded once and wakes nothing"
    )


# -- revisions and successors (gateway/api/lineage.py) ------------------------------------


class ReviseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    spec_version: str = Field(min_length=1, max_length=64, description="the new version; must differ from the run's")
    patch: dict[str, Any] = Field(description="an RFC 7396 merge patch over the run's contract")
    reason: str | None = Field(None, max_length=2000)


class SuccessorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(
        min_length=1,
        max_length=2000,
        pattern=r"\S",
        description="the authorization, recorded in both runs; required, not blank",
    )
    extend_by: StrictStr | StrictInt | None = Field(
        None, description='added to the inherited deadline: "24h", or seconds (admin only)'
    )


# -- connections (gateway/api/connections.py) ----------------------------------------------


class DisconnectBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(
        min_length=1,
        max_length=2000,
        pattern=r"\S",
        description="why, recorded in the run's history (`oauth_revoked`); required, not blank",
    )


# -- API keys (gateway/api/keys.py) --------------------------------------------------------


class CreateKeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=NAME.pattern, description="the principal's name: who asked, who decided")
    roles: list[Role] = Field(min_length=1, max_length=5)
    expires_in: Duration | None = Field(None, description="a duration like 90d; none: never expires")
    tenant: str | None = Field(None, max_length=128, description="the admin's own tenant, if given")


class RevokeKeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str | None = Field(None, max_length=2000)


class RotateKeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    overlap: Duration = Field(description="how long the old key keeps working, like 1h; 0s: not at all")
    expires_in: Duration | None = Field(
        None, description="the new key's lifetime; absent: the old key's lifetime; null: never expires"
    )


# -- the tool catalog (gateway/api/tools.py) -----------------------------------------------


class AcceptBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    definition_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


# -- purge on request (gateway/api/retention.py) -------------------------------------------


class PurgeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: str | None = Field(None, min_length=1, max_length=256, description="only this run's actions")
    action_id: str | None = Field(None, min_length=1, max_length=256, description="only this action")
    before: str | None = Field(
        None,
        max_length=64,
        json_schema_extra={"format": "date-time"},
        description="only actions settled before this time (ISO 8601 with an offset)",
    )
    reason: str | None = Field(None, min_length=1, max_length=2000, description="recorded with the purge")

    @field_validator("before")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None:
            parse_time(value)
        return value

    @model_validator(mode="after")
    def _scoped(self) -> PurgeBody:
        if self.run_id is None and self.action_id is None and self.before is None:
            raise ValueError("name run_id, action_id or before: a purge on request is never unscoped")
        return self
