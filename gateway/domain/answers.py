"""What a refused call tells the model: the words that name what to change. Pure.

A model reads a refusal through whatever its framework hands it: the text content (OpenAI Agents
SDK, langchain-mcp-adapters), `structuredContent` (pydantic-ai, Claude Code), or both. So every
refusal's message says what failed in words, what is left, and what to do next; the catalogue of
what each code names is docs/refusals.md, the evidence for the waiting answers
docs/decisions/0021-answers-a-model-can-act-on.md.

A message is recorded with the rejected action (bounded, gateway/domain/refusals.py); a piece of
the caller's own arguments goes into the refusal's `echo` instead, answered and never recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.errors import Code, Refusal

# How soon a model waiting on a person is told to check back (seconds). Long enough that a polling
# agent does not hammer the gateway, short enough that an approval decided in a minute is seen soon.
CHECK_BACK_S = 30
# The codes that mean "not executed, nothing is wrong with the call, wait for a person": answered as
# a non-error result where the tool declares no output schema, so that a framework's retry limit
# (pydantic-ai aborts a run on the second isError of one tool by default) is not spent on waiting.
WAITING_CODES = frozenset({Code.APPROVAL_REQUIRED, Code.APPROVAL_EXPIRED, Code.RUN_WAITING})
MAX_SHOWN = 80  # characters of one argument's value a refusal quotes back
MAX_LISTED = 10  # patterns, fields or arguments a message names before "and N more"

_ARG_DOT = re.compile(r"\bargs\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_ARG_INDEX = re.compile(r"\bargs\s*\[\s*(['\"])(.*?)\1\s*\]")


def argument_names(source: str) -> list[str]:
    """The top-level arguments a CEL expression over `args` reads, in order of first mention."""
    found = [(m.start(), m.group(1)) for m in _ARG_DOT.finditer(source)]
    found += [(m.start(), m.group(2)) for m in _ARG_INDEX.finditer(source)]
    names: list[str] = []
    for _, name in sorted(found):
        if name not in names:
            names.append(name)
    return names


def shown(value: Any) -> str:
    """One argument's value as a refusal quotes it: JSON, cut at MAX_SHOWN characters."""
    if isinstance(value, Mapping):
        return f"an object with {len(value)} key(s)"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def listed(items: Sequence[str]) -> str:
    """Names joined for a sentence, at most MAX_LISTED of them."""
    head = ", ".join(items[:MAX_LISTED])
    more = len(items) - MAX_LISTED
    return f"{head} and {more} more" if more > 0 else head


def constraint_refusal(tool: str, source: str, arguments: Any, *, evaluated: bool) -> Refusal:
    """`constraint_violated`: the expression, the arguments it reads, and (echoed) their values."""
    names = argument_names(source)
    args = arguments if isinstance(arguments, Mapping) else {}
    reads = f" (it reads {listed([f'`{n}`' for n in names])})" if names else ""
    why = "does not hold for these arguments" if evaluated else "could not be evaluated on these arguments"
    missing = [n for n in names if n not in args]
    if missing and not evaluated:
        why += f": {listed([f'`{n}`' for n in missing])} missing"
    message = (
        f"not executed: {tool} is allowed only where this run's constraint `{source}` holds{reads}, and it {why}; "
        f"change {listed([f'`{n}`' for n in names]) if names else 'the arguments'} so that it holds, or ask an "
        "operator to revise the contract"
    )
    values = {n: shown(args[n]) for n in names[:MAX_LISTED] if n in args}
    echo = "; ".join(f"{n} was {v}" for n, v in values.items()) or None
    return Refusal(
        Code.CONSTRAINT_VIOLATED,
        message,
        echo=echo,
        tool=tool,
        constraint=source,
        arguments=names,
        evaluated=evaluated,
    )


def forbidden_refusal(tool: str, allow: Sequence[str], deny: Sequence[str], denied_by: str | None) -> Refusal:
    """`forbidden` by the contract: the pattern that denies it, or the patterns it does not match."""
    if denied_by is not None:
        why = f"the contract denies it (pattern `{denied_by}`)"
    else:
        why = "no allow pattern of the contract matches it"
    allowed = listed([f"`{p}`" for p in allow]) or "nothing"
    message = (
        f"not executed: this run's contract does not allow {tool}: {why}; it allows {allowed}"
        + (f" except {listed([f'`{p}`' for p in deny])}" if deny else "")
        + "; tools/list shows the tools this run may call, or an operator may revise the contract"
    )
    return Refusal(Code.FORBIDDEN, message, tool=tool, allow=list(allow), deny=list(deny), denied_by=denied_by)


def schema_refusal(tool: str, faults: Sequence[Mapping[str, str]]) -> Refusal:
    """`invalid_arguments` against the tool's input schema: each field and the schema rule it breaks.

    `faults` are {field, rule, problem}; the problems quote the values (jsonschema's words), so they
    are echoed and listed in `problems`, never recorded."""
    where = [f"`{f['field']}` ({f['rule']})" for f in faults]
    message = (
        f"not executed: the arguments do not match {tool}'s input schema at {listed(where)}; "
        "fix these fields (tools/list shows the schema) and call again"
    )
    echo = "; ".join(f["problem"] for f in faults[:3])
    return Refusal(
        Code.INVALID_ARGUMENTS,
        message,
        echo=echo or None,
        tool=tool,
        problems=[f"{f['field']}: {f['problem']}" for f in faults],
        fields=[{"field": f["field"], "rule": f["rule"]} for f in faults],
    )


def approval_wait(tool: str, approval_id: str, decide_by: str | None, check_after: str | None) -> str:
    """How a model waits for a pending approval without spending its framework's retries."""
    return (
        f"do not call {tool} again before it is decided: check with warrant_status (pending_approvals) "
        f"after {check_after} ({CHECK_BACK_S} s) and go on with other work meanwhile; once {approval_id} is "
        f"approved, call {tool} with exactly these arguments and it will run; a person decides by {decide_by}"
    )


def budget_message(dim: str, *, limit: Any, spent: Any, reserved: Any, needed: Any, left: Any, holding: bool) -> str:
    """`budget_exhausted` for one dimension: what the call needs, what is left, what still works."""
    held = f", {reserved} held by calls in flight that release what they do not use" if holding else ""
    if dim == "tool_calls":
        still = "no further tool call is admitted; the warrant_* tools still answer"
    elif dim == "writes":
        still = "reads are still admitted"
    else:
        still = "calls that cost nothing are still admitted"
    return (
        f"not executed: the run's {dim} budget cannot cover this call: it needs {needed}, {left} of {limit} is left "
        f"({spent} spent{held}); {still}; an operator may raise the budget with a revision"
    )
