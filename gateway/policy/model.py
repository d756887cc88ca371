"""The policy document: per tool, its effect, cost, and approval rule; the limits shared by every
run (`shared_limits`). Gateway-wide.

A contract may narrow what a policy allows, never widen it: a tool no policy names is refused.
A contract cannot name a shared limit at all: it is the destination's quota, not the run's.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gateway.domain.compensation import Compensation
from gateway.domain.contract import ApprovalRule
from gateway.domain.limits import parse_rate
from gateway.domain.retries import RetryPolicy
from gateway.domain.units import currency_exponent, parse_money


class Cost(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    spend: str = "0"
    max: str | None = None  # an actual cost above this raises budget_overrun; reserved at admit

    @field_validator("spend", "max", mode="before")
    @classmethod
    def _money(cls, value: object) -> object:
        if value is None:
            return None
        parse_money(value, "USD")
        return value if isinstance(value, str) else str(value)

    @model_validator(mode="after")
    def _ordered(self) -> Cost:
        if self.max is not None and parse_money(self.max) < parse_money(self.spend):
            raise ValueError("cost.max must not be below cost.spend")
        return self


class ToolPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # None: a write, unless the tool's adapter trusts its pinned readOnlyHint and the hint says read-only.
    effect: Literal["read", "write"] | None = None
    cost: Cost = Cost()
    approval: ApprovalRule | None = None
    # The gate tries a transient failure again (docs/retries.md); None: the adapter's own behaviour.
    retries: RetryPolicy | None = None
    # The call that undoes a confirmed effect of this tool (gateway/domain/compensation.py).
    compensate: Compensation | None = None

    @field_validator("approval", mode="before")
    @classmethod
    def _rule(cls, value: object) -> object:
        # In a policy the rule's tool is the key it is written under.
        if isinstance(value, dict) and "tool" not in value:
            return {"tool": "*", **value}
        return value


class SharedLimit(BaseModel):
    """One limit shared by every run, tenant and replica of the gateway: on one exposed `tool`, or
    on every tool of one `destination` (an adapter's name), at most `max_concurrent` calls in
    flight and at most `rate` calls admitted (`"N/period"`, e.g. `"100/m"`) (docs/limits.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str | None = None
    destination: str | None = None
    max_concurrent: int | None = Field(default=None, ge=1)
    rate: str | None = None

    @field_validator("rate")
    @classmethod
    def _rate(cls, value: str | None) -> str | None:
        if value is not None:
            parse_rate(value)
        return value

    @model_validator(mode="after")
    def _one_scope(self) -> SharedLimit:
        if (self.tool is None) == (self.destination is None):
            raise ValueError("a shared limit names exactly one of tool and destination")
        if self.max_concurrent is None and self.rate is None:
            raise ValueError("a shared limit sets max_concurrent, rate, or both")
        return self

    @property
    def scope(self) -> str:
        return f"tool:{self.tool}" if self.tool is not None else f"destination:{self.destination}"


class PolicyDocument(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    currency: str = "USD"
    tools: dict[str, ToolPolicy] = Field(default_factory=dict)
    shared_limits: list[SharedLimit] = Field(default_factory=list)

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        currency_exponent(value)
        return value
