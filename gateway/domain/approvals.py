"""How approval rules combine, stated once (docs/policy.md). Pure: no I/O.

Every rule that speaks about a tool — the gateway policy's and each of the contract's whose pattern
matches — adds requirements; none removes one. For one call, the rules whose `when` holds (an
expression that cannot be evaluated holds: fail closed) combine field by field, the stricter wins:

| field          | stricter                                                             |
| ---            | ---                                                                  |
| `role`         | the higher rank: `admin` above `approver`                            |
| `decide_within`| the shorter                                                          |
| `valid_for`    | the shorter                                                          |
| `on_expiry`    | `pause` (a person must act) above `resume`                           |
| `when`         | the disjunction: approval is required when any rule's condition holds; no `when` is always |
| `blocks_run`   | `true` (the run waits) above `false` (its other writes go on)        |
| `approvers`    | the names both rules list (none listed: anyone with the role)        |
| `escalate_after`| the shorter (none: never escalated)                                 |
| `tool`         | the tool the rules were combined for                                 |

A tool's cost is the policy's alone: a contract has no per-tool cost to combine.

`looser_than(rule, floor)` names the fields on which a rule asks less than another (what a contract
may not do to the policy, and what an operator's revision may not do to the contract);
`dominated(old, new)` decides whether a new rule list asks at least as much as an old one for every
call (a revision that does is narrowing).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.domain.contract import ApprovalRule
from gateway.domain.units import parse_duration

# Ranks of the roles an approval may name; a higher rank may decide what a lower one may.
ROLE_RANK: dict[str, int] = {"approver": 1, "admin": 2}
ON_EXPIRY_RANK: dict[str, int] = {"resume": 1, "pause": 2}


def role_satisfies(required: str, roles: Collection[str]) -> bool:
    """A principal with `roles` may decide an approval that needs `required`: it holds that role or a higher one."""
    need = ROLE_RANK.get(required)
    if need is None:  # a role no approval may name: nobody
        return False
    return any(ROLE_RANK.get(role, 0) >= need for role in roles)


def _stricter_role(a: str, b: str) -> str:
    return a if ROLE_RANK[a] >= ROLE_RANK[b] else b


def _shorter(a: str, b: str) -> str:
    return a if parse_duration(a) <= parse_duration(b) else b


def _stricter_expiry(a: str, b: str) -> str:
    return a if ON_EXPIRY_RANK[a] >= ON_EXPIRY_RANK[b] else b


def _either(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:  # no condition: always required
        return None
    return a if a == b else f"({min(a, b)}) || ({max(a, b)})"  # in one order: whichever side holds which


def _either_blocks(a: bool, b: bool) -> bool:
    return a or b


def _common(a: list[str] | None, b: list[str] | None) -> list[str] | None:
    if a is None or b is None:  # no list: anyone with the role
        return b if a is None else a
    return sorted(set(a) & set(b))


def _sooner(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return b if a is None else a
    return _shorter(a, b)


def _keep_tool(a: str, b: str) -> str:
    return a  # replaced by the tool's own name in `combine`


# One entry per field of ApprovalRule: how two rules' values of it combine (a test checks every field has one).
COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "tool": _keep_tool,
    "role": _stricter_role,
    "decide_within": _shorter,
    "valid_for": _shorter,
    "on_expiry": _stricter_expiry,
    "when": _either,
    "blocks_run": _either_blocks,
    "approvers": _common,
    "escalate_after": _sooner,
}


def combine(tool: str, rules: Sequence[ApprovalRule]) -> ApprovalRule | None:
    """The one rule that meets every rule in `rules` on every field, for `tool`; None when there is none."""
    if not rules:
        return None
    fields = rules[0].model_dump()
    for rule in rules[1:]:
        other = rule.model_dump()
        fields = {name: COMBINE[name](fields[name], other[name]) for name in COMBINE}
    return ApprovalRule.model_validate(fields | {"tool": tool})


def matching(tool: str, rules: Sequence[ApprovalRule]) -> list[ApprovalRule]:
    """The rules whose pattern matches `tool`."""
    return [r for r in rules if fnmatch.fnmatchcase(tool, r.tool)]


def looser_than(rule: ApprovalRule, floor: ApprovalRule, fields: Collection[str] | None = None) -> list[str]:
    """The fields (of `fields`, default all but `tool` and `when`) on which `rule` asks less than `floor`.

    `when` is never looser: a rule's condition only says when it adds its requirements, and the
    floor's own condition still holds beside it.
    """
    names = [n for n in COMBINE if n not in ("tool", "when") and (fields is None or n in fields)]
    a, b = rule.model_dump(), floor.model_dump()
    return [n for n in names if COMBINE[n](a[n], b[n]) != a[n]]


def policy_problems(
    rules: Sequence[ApprovalRule], policy: Mapping[str, ApprovalRule], accepted: Collection[ApprovalRule] = ()
) -> list[dict[str, Any]]:
    """Every field a contract's rule sets looser than the policy's rule for a tool the rule's pattern matches.

    Only the fields the contract wrote count (a default it left alone combines, stricter wins, and
    asks nothing of its author); a rule in `accepted` (kept unchanged by a revision) is not checked
    again. `policy` maps each tool that has a policy approval to that rule.
    """
    problems = []
    for index, rule in enumerate(rules):
        if rule in accepted:
            continue
        for tool in sorted(t for t in policy if fnmatch.fnmatchcase(t, rule.tool)):
            floor = policy[tool]
            for name in looser_than(rule, floor, rule.model_fields_set):
                problems.append(
                    {
                        "field": f"approvals.{index}.{name}",
                        "problem": f"looser than the gateway's policy for {tool} ({floor.model_dump()[name]}); "
                        "a contract may ask more, never less",
                        "tool": tool,
                        "policy": floor.model_dump()[name],
                        "contract": rule.model_dump()[name],
                    }
                )
    return problems


def _covers_rule(new: ApprovalRule, old: ApprovalRule, covers: Callable[[str, str], bool]) -> bool:
    """`new` applies to every call `old` applies to and asks at least as much there."""
    if not covers(new.tool, old.tool):
        return False
    if new.when is not None and new.when != old.when:  # whether one expression implies another is not decided
        return False
    return not looser_than(new, old)


def dominated(old: Sequence[ApprovalRule], new: Sequence[ApprovalRule], covers: Callable[[str, str], bool]) -> bool:
    """For every call, the rules of `new` ask at least what those of `old` asked (sound, not complete:
    an exotic pair that is in fact covered may answer False)."""
    return all(any(_covers_rule(n, o, covers) for n in new) for o in old)


@dataclass(frozen=True)
class Requirement:
    """What one approval must have been asked under: the combined rule's terms, durations in seconds.

    An approval recorded under an older, looser rule (the policy tightened since, a gateway restarted
    with another policy) does not meet a stricter one: it is neither consumed nor waited on.
    """

    role: str
    decide_within: float
    valid_for: float
    on_expiry: str
    blocks_run: bool = True
    approvers: tuple[str, ...] | None = None  # sorted; None: anyone with the role

    @classmethod
    def of(cls, rule: ApprovalRule) -> Requirement:
        approvers = tuple(sorted(set(rule.approvers))) if rule.approvers is not None else None
        return cls(
            rule.role,
            parse_duration(rule.decide_within),
            parse_duration(rule.valid_for),
            rule.on_expiry,
            rule.blocks_run,
            approvers,
        )

    def met_by(self, recorded: Requirement) -> bool:
        slack = 1e-3  # the record keeps decide_by, not decide_within: float sums, not a looser rule
        return (
            ROLE_RANK.get(recorded.role, 0) >= ROLE_RANK.get(self.role, len(ROLE_RANK) + 1)
            and recorded.decide_within <= self.decide_within + slack
            and recorded.valid_for <= self.valid_for + slack
            and ON_EXPIRY_RANK.get(recorded.on_expiry, 0) >= ON_EXPIRY_RANK.get(self.on_expiry, len(ON_EXPIRY_RANK) + 1)
            and (recorded.blocks_run or not self.blocks_run)
            and (
                self.approvers is None
                or (recorded.approvers is not None and set(recorded.approvers) <= set(self.approvers))
            )
        )


def may_decide(approvers: Collection[str] | None, name: str, key_id: str | None) -> bool:
    """A principal may decide an approval whose rule names `approvers`: none named, or it is one (by
    its key's name or id)."""
    return approvers is None or name in approvers or (key_id is not None and key_id in approvers)
