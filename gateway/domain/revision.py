"""Revisions and delegation, as pure functions over contracts (docs/progress.md): no I/O.

- `merge_patch`: RFC 7396 over the contract's wire form.
- `classify(old, new)`: every change a revision makes, each one narrowing, widening or neutral.
  An operator may apply a revision with no widening change; a widening one needs an admin.
- `narrow_child(parent, child, ...)`: a delegated sub-run's contract narrowed to its parent's
  authority, or every problem that stops it.
- `covers(outer, inner)`: whether every tool name an fnmatch pattern matches is matched by another.

Anything this module cannot show to be narrowing is widening: an unknown contract field that
changed, a changed constraint, an approval rule removed or loosened (or given another `when`).
Fail closed.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from gateway.domain.approvals import dominated
from gateway.domain.contract import NO_COMPLETION_RULES, NO_ESCALATION_RULES, NO_PLAN_RULES, Contract, problems_of
from gateway.domain.units import parse_duration, parse_money
from gateway.errors import Code, Forbidden, InvalidRequest, Refusal, WarrantError

CARVED: tuple[str, ...] = ("spend", "tool_calls", "writes")  # what a child's creation takes from its parent


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396, section 2, as its pseudo-code says: null removes a member, an object merges, anything
    else replaces. Neither argument is changed."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch(result.get(name), value)
    return result


# -- fnmatch pattern containment ---------------------------------------------------------------
# A pattern is a sequence of tokens: `*`, `?`, a class `[...]` / `[!...]`, or a literal character.
# `covers` decides L(inner) ⊆ L(outer) soundly (never True when some name matches only inner);
# it may say False for an exotic pair that is in fact covered, which then counts as widening.
# Matching the inner pattern's *text* with fnmatch is not sound: "t__*" is matched by "t__?"
# (one character after "t__"), yet "t__*" allows every t__ tool.
_STAR = ("*",)
_ANY = ("?",)


@dataclass(frozen=True)
class _Class:
    chars: frozenset[str]
    negated: bool

    def accepts(self, char: str) -> bool:
        return (char in self.chars) != self.negated


_Token = tuple[str] | _Class


@functools.lru_cache(maxsize=1024)
def _tokens(pattern: str) -> tuple[_Token, ...]:
    out: list[_Token] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            if not out or out[-1] != _STAR:  # "**" is "*"
                out.append(_STAR)
            i += 1
        elif char == "?":
            out.append(_ANY)
            i += 1
        elif char == "[":
            parsed = _parse_class(pattern, i + 1)
            if parsed is None:  # no closing bracket: fnmatch reads "[" literally
                out.append(("=" + char,))
                i += 1
            else:
                klass, i = parsed
                out.append(klass)
        else:
            out.append(("=" + char,))
            i += 1
    return tuple(out)


def _parse_class(pattern: str, start: int) -> tuple[_Class, int] | None:
    """The class starting after its "[" (as fnmatch reads it), and the index after its "]"."""
    i, negated = start, False
    if i < len(pattern) and pattern[i] == "!":
        negated, i = True, i + 1
    if i < len(pattern) and pattern[i] == "]":  # a "]" first is a member
        i += 1
    end = pattern.find("]", i)
    if end < 0:
        return None
    body = pattern[start + int(negated) : end]
    chars: set[str] = set()
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            low, high = body[k], body[k + 2]
            chars.update(chr(c) for c in range(ord(low), ord(high) + 1))  # a reversed range is empty
            k += 3
        else:
            chars.add(body[k])
            k += 1
    return _Class(frozenset(chars), negated), end + 1


def _one_covers(outer: _Token, inner: _Token) -> bool:
    """Every single character `inner` matches is matched by `outer` (neither is a star)."""
    if outer == _ANY:
        return True
    if inner == _ANY:
        return isinstance(outer, _Class) and outer.negated and not outer.chars
    inner_chars: frozenset[str] | None
    if isinstance(inner, _Class):
        if inner.negated:  # matches all but a few: only a class excluding no more of them covers it
            return isinstance(outer, _Class) and outer.negated and outer.chars <= inner.chars
        inner_chars = inner.chars
    else:
        inner_chars = frozenset(inner[0][1:])
    if isinstance(outer, _Class):
        return all(outer.accepts(c) for c in inner_chars)
    return inner_chars == frozenset(outer[0][1:])


def covers(outer: str, inner: str) -> bool:
    """True when every name the fnmatch pattern `inner` matches, `outer` matches too."""
    o, n = _tokens(outer), _tokens(inner)

    @functools.cache
    def walk(i: int, j: int) -> bool:
        if j == len(n):
            return all(t == _STAR for t in o[i:])
        if i == len(o):
            return False
        if o[i] == _STAR:  # it matches nothing here, or swallows the inner token whatever it is
            return walk(i + 1, j) or walk(i, j + 1)
        if n[j] == _STAR:
            return False
        return _one_covers(o[i], n[j]) and walk(i + 1, j + 1)

    return walk(0, 0)


def covered(pattern: str, by: Sequence[str]) -> bool:
    return any(covers(outer, pattern) for outer in by)


# -- classify ----------------------------------------------------------------------------------
class Effect(StrEnum):
    NARROWS = "narrows"
    WIDENS = "widens"
    NEUTRAL = "neutral"  # neither: lease TTL, progress expectation, milestones


@dataclass(frozen=True)
class Change:
    """One difference between two contracts, in their wire form."""

    field: str  # "budgets.spend", "authority.allow", "milestones.inventory", ...
    effect: Effect
    was: Any
    now: Any

    @property
    def widens(self) -> bool:
        return self.effect is Effect.WIDENS

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "effect": self.effect.value, "was": self.was, "now": self.now}


def _by_size(field: str, was: Any, now: Any, old: float, new: float) -> Change:
    return Change(field, Effect.NARROWS if new < old else Effect.WIDENS, was, now)


def _budgets(old: Contract, new: Contract) -> list[Change]:
    out = []
    a, b = old.budgets, new.budgets
    if a.spend != b.spend:
        spend_was, spend_now = parse_money(a.spend, old.currency), parse_money(b.spend, new.currency)
        if spend_was != spend_now:  # "20" and "20.00" are one amount
            out.append(_by_size("budgets.spend", a.spend, b.spend, spend_was, spend_now))
    for dim in ("tool_calls", "writes", "active_seconds"):
        was, now = getattr(a, dim), getattr(b, dim)
        if was != now:
            out.append(_by_size(f"budgets.{dim}", was, now, was, now))
    if a.count_waiting != b.count_waiting:
        # Counting waiting time spends active_seconds faster: turning it on narrows, off widens.
        effect = Effect.NARROWS if b.count_waiting else Effect.WIDENS
        out.append(Change("budgets.count_waiting", effect, a.count_waiting, b.count_waiting))
    return out


def _authority(old: Contract, new: Contract) -> list[Change]:
    out = []
    a, b = old.authority, new.authority
    if a.allow != b.allow:
        wider = [p for p in b.allow if not covered(p, a.allow)]
        out.append(Change("authority.allow", Effect.WIDENS if wider else Effect.NARROWS, a.allow, b.allow))
    if a.deny != b.deny:
        # Every pattern denied before must still be denied (by itself or a wider pattern).
        lifted = [p for p in a.deny if not covered(p, b.deny)]
        out.append(Change("authority.deny", Effect.WIDENS if lifted else Effect.NARROWS, a.deny, b.deny))
    for tool in sorted(set(a.constraints) | set(b.constraints)):
        was, now = a.constraints.get(tool), b.constraints.get(tool)
        if was == now:
            continue
        # Only a new constraint is known to narrow: whether one expression implies another is not decided here.
        out.append(Change(f"authority.constraints.{tool}", Effect.NARROWS if was is None else Effect.WIDENS, was, now))
    return out


def _approvals(old: Contract, new: Contract) -> list[Change]:
    was = [r.model_dump(mode="json") for r in old.approvals]
    now = [r.model_dump(mode="json") for r in new.approvals]
    if was == now:
        return []
    # Every rule matching a tool combines with the others, the stricter wins (gateway/domain/approvals.py),
    # so order means nothing: the revision narrows when each old rule is met by a new one that applies
    # wherever it did and asks at least as much there.
    if sorted(map(repr, was)) == sorted(map(repr, now)):
        return [Change("approvals", Effect.NEUTRAL, was, now)]
    narrows = dominated(old.approvals, new.approvals, covers)
    return [Change("approvals", Effect.NARROWS if narrows else Effect.WIDENS, was, now)]


def _milestones(old: Contract, new: Contract) -> list[Change]:
    was = {m.id: m.model_dump(mode="json") for m in old.milestones}
    now = {m.id: m.model_dump(mode="json") for m in new.milestones}
    return [
        Change(f"milestones.{mid}", Effect.NEUTRAL, was.get(mid), now.get(mid))
        for mid in sorted(set(was) | set(now))
        if was.get(mid) != now.get(mid)
    ]


def _plan(old: Contract, new: Contract) -> list[Change]:
    """The plan rules (docs/tasks.md): each one stricter narrows, looser widens."""
    a, b = old.plan or NO_PLAN_RULES, new.plan or NO_PLAN_RULES
    out = []
    for name in ("required_before_writes", "revision_needs_budget", "fail_run_on_task_failure"):
        was, now = getattr(a, name), getattr(b, name)
        if was != now:
            out.append(Change(f"plan.{name}", Effect.NARROWS if now else Effect.WIDENS, was, now))
    if a.max_tasks != b.max_tasks:
        out.append(_by_size("plan.max_tasks", a.max_tasks, b.max_tasks, a.max_tasks, b.max_tasks))
    was_revisions, now_revisions = a.max_plan_revisions, b.max_plan_revisions
    if was_revisions != now_revisions:
        # None is the hard bound: any number narrows it, and lifting a number widens.
        narrows = now_revisions is not None and (was_revisions is None or now_revisions < was_revisions)
        out.append(
            Change(
                "plan.max_plan_revisions", Effect.NARROWS if narrows else Effect.WIDENS, was_revisions, now_revisions
            )
        )
    return out


# How strict each on_verification_failed is: a revision toward fail narrows, toward continue widens.
_ON_VERIFICATION_FAILED = {"continue": 0, "pause": 1, "fail": 2}


def _completion(old: Contract, new: Contract) -> list[Change]:
    """The completion rules (gateway/domain/completion.py): stricter narrows, looser widens."""
    a, b = old.completion or NO_COMPLETION_RULES, new.completion or NO_COMPLETION_RULES
    out = []
    if a.on_verification_failed != b.on_verification_failed:
        narrows = _ON_VERIFICATION_FAILED[b.on_verification_failed] > _ON_VERIFICATION_FAILED[a.on_verification_failed]
        effect = Effect.NARROWS if narrows else Effect.WIDENS
        out.append(
            Change("completion.on_verification_failed", effect, a.on_verification_failed, b.on_verification_failed)
        )
    was, now = a.max_completion_attempts, b.max_completion_attempts
    if was != now:
        # None is no bound: any number narrows it, and lifting a number widens.
        narrows = now is not None and (was is None or now < was)
        out.append(Change("completion.max_completion_attempts", Effect.NARROWS if narrows else Effect.WIDENS, was, now))
    return out


def _escalation(old: Contract, new: Contract) -> list[Change]:
    """Serious refusals: naming more tells the operator more (narrows); naming fewer widens."""
    a = (old.escalation or NO_ESCALATION_RULES).serious_refusals
    b = (new.escalation or NO_ESCALATION_RULES).serious_refusals
    if sorted(a) == sorted(b):
        return []
    effect = Effect.NARROWS if set(a) <= set(b) else Effect.WIDENS
    return [Change("escalation.serious_refusals", effect, a, b)]


def _workers(old: Contract, new: Contract) -> list[Change]:
    a, b = old.workers, new.workers
    if sorted(a) == sorted(b):
        return []
    # Empty means any worker key of the tenant: a named list narrows it; emptying a list widens.
    narrows = bool(b) and (not a or set(b) <= set(a))
    return [Change("workers", Effect.NARROWS if narrows else Effect.WIDENS, a, b)]


# Fields compared on their own below; any other field that changes is widening (fail closed).
_HANDLED = frozenset(
    {
        "spec_version",
        "currency",
        "goal",
        "owner",
        "expires_in",
        "lease_ttl",
        "progress_expectation",
        "budgets",
        "authority",
        "approvals",
        "milestones",
        "workers",
        "forbid_creator_approval",
        "plan",
        "completion",
        "escalation",
        "tags",
    }
)


def classify(old: Contract, new: Contract) -> list[Change]:
    """Every change from `old` to `new` but the spec_version itself, in a stable order.

    Raises: InvalidRequest `invalid_contract` when the currency changes (money already spent and
    reserved is in the old one).
    """
    if old.currency != new.currency:
        raise InvalidRequest(
            "a revision cannot change the contract's currency",
            code=Code.INVALID_CONTRACT,
            problems=[{"field": "currency", "problem": f"must stay {old.currency}"}],
        )
    out: list[Change] = []
    for name in ("goal", "owner"):
        if getattr(old, name) != getattr(new, name):
            out.append(Change(name, Effect.WIDENS, getattr(old, name), getattr(new, name)))
    expires_was, expires_now = parse_duration(old.expires_in), parse_duration(new.expires_in)
    if expires_was != expires_now:
        out.append(_by_size("expires_in", old.expires_in, new.expires_in, expires_was, expires_now))
    for name in ("lease_ttl", "progress_expectation", "tags"):  # tags: labels for reports, no authority
        if getattr(old, name) != getattr(new, name):
            out.append(Change(name, Effect.NEUTRAL, getattr(old, name), getattr(new, name)))
    out += _budgets(old, new) + _authority(old, new) + _approvals(old, new) + _milestones(old, new)
    out += _workers(old, new) + _plan(old, new) + _completion(old, new) + _escalation(old, new)
    if old.forbid_creator_approval != new.forbid_creator_approval:
        effect = Effect.NARROWS if new.forbid_creator_approval else Effect.WIDENS
        out.append(Change("forbid_creator_approval", effect, old.forbid_creator_approval, new.forbid_creator_approval))
    for name in sorted(set(type(old).model_fields) - _HANDLED):
        was, now = old.model_dump(mode="json").get(name), new.model_dump(mode="json").get(name)
        if was != now:
            out.append(Change(name, Effect.WIDENS, was, now))
    return out


def require_narrowing(changes: Sequence[Change], *, may_widen: bool) -> None:
    """Raises: Forbidden `widening_requires_admin`, naming every widening change, unless `may_widen`."""
    wider = [c.as_dict() for c in changes if c.widens]
    if wider and not may_widen:
        raise Forbidden("only an admin may widen a run's contract", code=Code.WIDENING_REQUIRES_ADMIN, changes=wider)


def invalidated_milestones(changes: Sequence[Change]) -> list[str]:
    """The milestones a revision removed or whose checks it changed: their states no longer hold."""
    out = []
    for change in changes:
        if not change.field.startswith("milestones."):
            continue
        was, now = change.was, change.now
        if was is not None and (now is None or was.get("checks") != now.get("checks")):
            out.append(change.field.removeprefix("milestones."))
    return out


# -- delegated sub-runs ------------------------------------------------------------------------
@dataclass(frozen=True)
class Narrowed:
    """A child's contract as it will run, and what its creation carves out of the parent."""

    contract: Contract
    carve: dict[str, int]  # spend (minor units), tool_calls, writes
    clamped: bool  # its expires_in was cut to the parent's deadline


def narrow_child(
    parent: Contract, child: Contract, parent_remaining: dict[str, int], parent_deadline_left: float
) -> Narrowed | list[dict[str, Any]]:
    """The child's contract narrowed to the parent's authority, or every problem (`field`, `problem`,
    and `dimension` for a budget that does not fit the parent's remaining).

    Authority: each allow pattern must be covered by one of the parent's; the parent's deny
    patterns are added; a constraint on a tool both name becomes `(parent) && (child)`; the
    parent's approval rules are kept beside the child's (every matching rule combines, the stricter
    wins, so a child's rule can add or tighten an approval, never loosen one). Budgets: spend,
    tool_calls and writes must fit the parent's remaining (they are carved out of it);
    active_seconds may not exceed the parent's remaining (time runs in parallel: bounded, not
    carved). A deadline past the parent's is clamped to it.
    """
    problems: list[dict[str, Any]] = []
    if child.currency != parent.currency:
        problems.append({"field": "currency", "problem": f"must be the parent's, {parent.currency}"})
        return problems  # the amounts below cannot be compared
    for pattern in child.authority.allow:
        if not covered(pattern, parent.authority.allow):
            problems.append(
                {"field": "authority.allow", "problem": f"{pattern!r} is not covered by the parent's allow patterns"}
            )
    limits = child.terms().limits
    for dim in (*CARVED, "active_seconds"):
        if limits[dim] > parent_remaining[dim]:
            problems.append(
                {
                    "field": f"budgets.{dim}",
                    "problem": f"{limits[dim]} is more than the parent has left ({parent_remaining[dim]})",
                    "dimension": dim,
                }
            )
    if problems:
        return problems
    deny = list(dict.fromkeys([*child.authority.deny, *parent.authority.deny]))
    constraints = dict(parent.authority.constraints)
    for tool, source in child.authority.constraints.items():
        constraints[tool] = f"({constraints[tool]}) && ({source})" if tool in constraints else source
    approvals = [*parent.approvals, *(r for r in child.approvals if r not in parent.approvals)]
    left = int(parent_deadline_left)
    clamped = parse_duration(child.expires_in) > left
    body = child.model_dump(mode="json") | {
        "authority": {"allow": child.authority.allow, "deny": deny, "constraints": constraints},
        "approvals": [r.model_dump(mode="json") for r in approvals],
        "forbid_creator_approval": child.forbid_creator_approval or parent.forbid_creator_approval,
    }
    if clamped:
        body["expires_in"] = f"{max(left, 0)}s"
    try:
        narrowed = Contract.model_validate(body)
    except ValidationError as exc:  # a joined constraint the expression language refuses
        return problems_of(exc)
    return Narrowed(narrowed, {dim: limits[dim] for dim in CARVED}, clamped)


def child_refusal(problems: list[dict[str, Any]]) -> WarrantError:
    """What a refused child creation answers: `budget_exhausted` (409) naming the first dimension
    when only budgets do not fit, else `invalid_contract` (422) listing every problem."""
    dims = [p["dimension"] for p in problems if "dimension" in p]
    if dims and len(dims) == len(problems):
        return Refusal(
            Code.BUDGET_EXHAUSTED,
            f"the parent's remaining {dims[0]} cannot cover the child's",
            dimension=dims[0],
            problems=problems,
        )
    return InvalidRequest(
        f"the child's contract has {len(problems)} problem(s)", code=Code.INVALID_CONTRACT, problems=problems
    )
