"""Policy decisions for one call: pure functions of the catalog entry, the contract and the arguments.

Combination, stated once: the tool must exist and have a policy (fail closed); the contract's
deny patterns win over its allow patterns; a downstream tool's definition must match its pin;
every constraint of the contract must hold, and a constraint that cannot be evaluated refuses.
Approval is required when the policy's rule or any of the contract's rules applies (a contract may
add approvals, never remove or loosen them); the rules that apply combine, the stricter wins on
every field (gateway/domain/approvals.py, docs/policy.md); a `when` expression that cannot be
evaluated requires approval.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Protocol

from gateway.domain.answers import constraint_refusal, forbidden_refusal, schema_refusal
from gateway.domain.approvals import combine
from gateway.domain.contract import ApprovalRule, Terms
from gateway.domain.expressions import ExpressionError, compiled
from gateway.errors import Code, Refusal
from gateway.policy.model import ToolPolicy


class PinStateLike(Protocol):
    @property
    def callable(self) -> bool: ...


class PinLike(Protocol):
    @property
    def definition_sha256(self) -> str: ...


class Candidate(Protocol):
    """What the engine reads of a catalog entry (gateway/catalog/catalog.py `ToolSpec` is one): the
    policy sits below the catalog, so it names the few things it decides on rather than the entry."""

    @property
    def name(self) -> str: ...

    @property
    def policy(self) -> ToolPolicy | None: ...

    @property
    def definition_sha256(self) -> str: ...

    @property
    def pin_state(self) -> PinStateLike: ...

    @property
    def pinned(self) -> PinLike | None: ...

    def argument_faults(self, arguments: Any) -> list[dict[str, str]]: ...


def authority_refusal(name: str, spec: Candidate | None, terms: Terms, arguments: Any) -> Refusal | None:
    """Gate steps 2 and 3: the tool exists, its arguments fit its schema, policy and contract allow it."""
    if spec is None:
        return Refusal(
            Code.TOOL_NOT_FOUND,
            f"not executed: no tool named {name!r} is served here; tools/list shows the tools this run may call",
            tool=name,
        )
    if spec.policy is None:
        return Refusal(
            Code.FORBIDDEN,
            f"not executed: {name} has no policy yet, so the gateway refuses it (fail closed); an operator must "
            "give it one; tools/list shows the tools this run may call",
            tool=name,
        )
    if not terms.allows(name):
        denied_by = next((p for p in terms.deny if fnmatch.fnmatchcase(name, p)), None)
        return forbidden_refusal(name, terms.allow, terms.deny, denied_by)
    if not spec.pin_state.callable:
        return pin_refusal(spec)
    faults = spec.argument_faults(arguments)
    if faults:
        return schema_refusal(name, faults)
    constraint = terms.constraints.get(name)
    if constraint is not None:
        try:
            holds, evaluated = constraint.evaluate(arguments), True
        except ExpressionError:
            holds, evaluated = False, False
        if not holds:
            return constraint_refusal(name, constraint.source, arguments, evaluated=evaluated)
    return None


def pin_refusal(spec: Candidate) -> Refusal:
    """A downstream tool whose definition is new or differs from the one pinned."""
    pinned = spec.pinned.definition_sha256 if spec.pinned is not None else None
    what = "is new" if pinned is None else "changed since it was pinned"
    return Refusal(
        Code.TOOL_DEFINITION_CHANGED,
        f"the definition of {spec.name} {what}; an operator must accept it first (warrant tools pending)",
        tool=spec.name,
        definition_sha256=spec.definition_sha256,
        pinned_sha256=pinned,
    )


def approval_rule(name: str, spec: Candidate, terms: Terms, arguments: Any) -> ApprovalRule | None:
    """The rule that requires approval for this call, if any: the policy's and the contract's rules that
    apply, combined so that the stricter wins on every field."""
    policy = spec.policy.approval if spec.policy else None
    rules = [*terms.approval_rules(name), *([policy] if policy is not None else [])]
    return combine(name, [rule for rule in rules if _applies(rule, arguments)])


def _applies(rule: ApprovalRule, arguments: Any) -> bool:
    if rule.when is None:
        return True
    try:
        return compiled(rule.when).evaluate(arguments)
    except ExpressionError:
        return True  # cannot tell: ask a human
