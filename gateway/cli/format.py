"""How the operator commands show things to a person: plain aligned text, no colours.

Pure functions of the API's JSON (tests/unit/test_cli_format.py): tables, budget bars, times,
payloads and their diffs, one-line event summaries. `--json` output never passes through here.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from gateway.domain.units import format_duration

BAR_WIDTH = 10
SUMMARY_WIDTH = 160  # the longest event summary on one line


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def cell(value: Any) -> str:
    """A table cell: `-` for nothing, the text otherwise."""
    if value is None or value == "":
        return "-"
    return str(value)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns aligned on two spaces; the last column is not padded, so no line ends in blanks."""
    lines = [list(header), *([cell(v) for v in row] for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def _amount(value: Any) -> Decimal:
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return Decimal(0)


def _cells(part: Decimal, limit: Decimal, width: int) -> int:
    """Cells for `part` of `limit`: full only when all is used, empty only when none is."""
    if part <= 0:
        return 0
    if part >= limit:
        return width
    cells = int((part / limit * width).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return min(max(cells, 1), width - 1)


def bar(spent: Any, reserved: Any, limit: Any, width: int = BAR_WIDTH) -> str:
    """`[###++-----]`: `#` spent, `+` reserved for actions in flight, `-` still free."""
    used, held, whole = _amount(spent), _amount(reserved), _amount(limit)
    if whole <= 0:
        return "[" + ("#" if used > 0 else "-") * width + "]"
    done = _cells(used, whole, width)
    taken = max(_cells(used + held, whole, width), done)
    return "[" + "#" * done + "+" * (taken - done) + "-" * (width - taken) + "]"


def budget_lines(budgets: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """`spend       [####------] 2.10 / 5.00 (reserved 0.10)`, one line per dimension."""
    width = max((len(name) for name in budgets), default=0)
    lines = []
    for name, b in budgets.items():
        line = f"{name.ljust(width)}  {bar(b['spent'], b['reserved'], b['limit'])} {b['spent']} / {b['limit']}"
        if _amount(b["reserved"]) > 0:
            line += f" (reserved {b['reserved']})"
        lines.append(line)
    return lines


def short_time(value: str | None) -> str:
    """`2026-03-01T12:00:05.123456Z` as `2026-03-01 12:00:05Z`; `-` for none."""
    if not value:
        return "-"
    date, _, rest = value.partition("T")
    return f"{date} {rest.split('.')[0].rstrip('Z')}Z" if rest else value


def short_hash(value: str | None, length: int = 12) -> str:
    return value[:length] if value else "-"


def pretty_json(value: Any) -> str:
    """A payload as a person reads it: indented, keys sorted (the order the hash binds anyway)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def compact_json(value: Any, width: int = 60) -> str:
    return _clip(json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False), width)


def payload_diff(old: Any, new: Any, old_label: str, new_label: str) -> str:
    """A unified diff of two payloads' pretty JSON; empty when they are the same."""
    lines = difflib.unified_diff(
        pretty_json(old).splitlines(), pretty_json(new).splitlines(), old_label, new_label, lineterm=""
    )
    return "\n".join(lines)


def _summary_value(value: Any, width: int = 48) -> str:
    if isinstance(value, str):
        if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            return short_hash(value)
        return _clip(value if value.isprintable() and " " not in value else json.dumps(value), width)
    return compact_json(value, width)


def summarize(data: Mapping[str, Any], width: int = SUMMARY_WIDTH) -> str:
    """An event's data as `key=value ...`: nothing empty, hashes shortened, one line at most `width`."""
    return _clip(" ".join(f"{k}={_summary_value(v)}" for k, v in data.items() if v not in (None, "", [], {})), width)


def event_line(event: Mapping[str, Any]) -> str:
    """One line per event: seq, time, type, a compact summary of its data."""
    data = event.get("data")
    summary = summarize(data) if isinstance(data, Mapping) else cell(data)
    return f"{event['seq']:>5}  {short_time(event.get('at'))}  {event['type']:<20}  {summary}".rstrip()


def _seconds(value: Any) -> str:
    """`3725.5` seconds as `1h2m5s`; `-` for none."""
    return "-" if value is None else format_duration(round(value))


def report_text(report: Mapping[str, Any]) -> str:
    """`runs report` for a person: the pilot measures, the recovery episodes, then the cost by tag
    adding up to the spend."""
    review, recovery, cost = report["review_time"], report["recovery"], report["cost"]
    active = report["budgets"]["active_seconds"]
    spend = report["budgets"]["spend"]
    approvals = review["approvals"]
    episodes = recovery.get("episodes", [])
    causes = ", ".join(f"{n} {cause}" for cause, n in recovery.get("by_cause", {}).items() if n)
    reasons = ", ".join(report.get("unusable_reasons", [])) or report["status"]
    measures = [
        ("usable", "yes (completed)" if report["usable"] else f"no ({reasons})"),
        (
            "review time",
            f"{approvals} decided approval{'s' * (approvals != 1)}"
            + (
                f": total {_seconds(review['total_seconds'])}, median {_seconds(review['median_seconds'])}, "
                f"p90 {_seconds(review.get('p90_seconds'))}, max {_seconds(review['max_seconds'])}"
                if approvals
                else ""
            ),
        ),
        (
            "recovery",
            f"{len(episodes)} episode{'s' * (len(episodes) != 1)}{f' ({causes})' if causes else ''}, "
            f"{recovery['resumes']} resume{'s' * (recovery['resumes'] != 1)}, "
            f"{recovery['recovery_spend']} spent, {_seconds(recovery['recovery_seconds'])}",
        ),
        (
            "duplicates",
            f"{report.get('duplicates_prevented', 0)} prevented, "
            f"{report.get('duplicate_effects', report.get('duplicates_found', 0))} effects found twice",
        ),
        ("active time", f"{_seconds(active['spent'])} of {_seconds(active['limit'])}"),
    ]
    lines = [f"{report['run_id']}  {report['status']}"]
    lines += [f"  {name.ljust(11)}  {value}" for name, value in measures]
    for e in episodes:
        ended = e["ended_at"] or "now"
        lines.append(
            f"    {e['cause']}: {e['started_at']} to {ended} ({e['outcome']}, {_seconds(e['seconds'])}), "
            f"{e['tool_calls']} call{'s' * (e['tool_calls'] != 1)}, {e['spend']} spent"
        )
    rows = [[tag, amount] for tag, amount in cost["by_tag"].items()] + [["total", cost["total"]]]
    lines += ["", f"cost by tag ({report.get('currency', '')}); spend budget {spend['spent']} of {spend['limit']}"]
    lines += [f"  {line}" for line in table(["TAG", "AMOUNT"], rows).splitlines()]
    return "\n".join(lines)


def sums_text(sums: Mapping[str, Any]) -> str:
    """`warrant report lineage|runs` for a person: the sums, then one line per run."""
    review, recovery = sums["review_time"], sums["recovery"]
    causes = ", ".join(f"{n} {cause}" for cause, n in recovery["by_cause"].items() if n) or "none"
    reasons = ", ".join(f"{n} {reason}" for reason, n in sums["unusable_reasons"].items() if n) or "none"
    lines = [
        f"{sums['runs']} run{'s' * (sums['runs'] != 1)}{' (truncated: narrow the query)' if sums['truncated'] else ''}",
        f"  usable       {sums['usable']} of {sums['runs']}; not usable because: {reasons}",
        f"  review time  {review['approvals']} decided; p50 {_seconds(review['p50_seconds'])}, "
        f"p90 {_seconds(review['p90_seconds'])}",
        f"  recovery     {recovery['episodes']} episodes ({causes}), {recovery['open']} open, "
        f"{_seconds(recovery['seconds'])}",
        f"  duplicates   {sums['duplicates_prevented']} prevented, {sums['duplicate_effects']} effects found twice",
    ]
    for currency, money in sums["cost"].items():
        tags = ", ".join(f"{tag} {amount}" for tag, amount in money["by_contract_tag"].items())
        lines.append(f"  cost {currency}  total {money['total']}; by contract tag: {tags}")
    rows = [
        (
            i["run_id"],
            i["status"],
            "yes" if i["usable"] else "no",
            f"{i['total']} {i['currency']}",
            i["episodes"],
            ",".join(i["tags"]) or "-",
        )
        for i in sums["items"]
    ]
    lines.append(table(["run", "status", "usable", "cost", "episodes", "tags"], rows))
    return "\n".join(lines)


def plan_text(plan: Mapping[str, Any]) -> str:
    """The run's plan for a person: where it stands, then every task with its attempts and calls."""
    if not plan.get("version"):
        return f"run {plan.get('run_id')}: no plan"
    progress = plan["progress"]
    lines = [
        f"plan version {plan['version']} ({plan['revisions']} revision{'s' * (plan['revisions'] != 1)}): "
        f"{progress['done']} of {progress['total']} tasks completed"
    ]
    for label in ("current", "next"):
        step = plan.get(label)
        if step is None:
            lines.append(f"{label}: none")
            continue
        needs = step["preconditions"]
        deps = ", ".join(f"{d['task_id']} ({d['status']})" for d in needs["depends_on"]) or "nothing"
        lines.append(
            f"{label}: {step['task_id']} ({step['status']}, attempt {step['attempts']}, "
            f"{needs['attempts_left']} left) after {deps}; {len(needs['completion'])} completion check(s)"
        )
    rows = [
        (
            t["task_id"],
            t["status"],
            f"{t['attempts']}/{t['max_attempts']}",
            t["calls"]["tool_calls"],
            t["calls"]["effects"],
            t["calls"]["spend"],
            ", ".join(t["depends_on"]) or "-",
            t["title"],
        )
        for t in plan["tasks"]
    ]
    lines.append(table(["task", "status", "attempts", "calls", "effects", "spend", "after", "title"], rows))
    return "\n".join(lines)
