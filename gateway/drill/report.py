"""The drill's report: a table for people, the same as JSON for CI."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from gateway.drill.runner import Result

COLUMNS = ("case", "mode", "expected", "observed", "duplicates", "overspend", "verdict")
WIDTH = {"case": 30, "mode": 7, "expected": 44, "observed": 44, "duplicates": 10, "overspend": 9, "verdict": 7}


def _cells(result: Result) -> dict[str, str]:
    return {
        "case": result.case,
        "mode": result.mode,
        "expected": result.expected,
        "observed": result.observed or "-",
        "duplicates": str(result.duplicates),
        "overspend": str(len(result.overspend)),
        "verdict": result.verdict.upper(),
    }


def table(results: Sequence[Result]) -> str:
    """Rows wrapped to fixed widths; the problems of every failed case below the table."""
    lines = ["  ".join(name.ljust(WIDTH[name]) for name in COLUMNS)]
    lines.append("  ".join("-" * WIDTH[name] for name in COLUMNS))
    for result in results:
        cells = {k: textwrap.wrap(v, WIDTH[k]) or [""] for k, v in _cells(result).items()}
        for i in range(max(len(v) for v in cells.values())):
            lines.append("  ".join((cells[k][i] if i < len(cells[k]) else "").ljust(WIDTH[k]) for k in COLUMNS))
    failed = [r for r in results if r.verdict == "fail"]
    if failed:
        lines.append("")
        lines.append("failed cases:")
        for result in failed:
            lines.append(f"  {result.case} ({result.mode}), evidence in {result.folder}:")
            lines += [f"    - {problem}" for problem in result.problems]
    return "\n".join(lines)


def summary(results: Sequence[Result], sabotage: tuple[str, ...]) -> dict[str, Any]:
    passed = sum(r.verdict == "pass" for r in results)
    failed = sorted({r.case for r in results if r.verdict == "fail"})
    out: dict[str, Any] = {
        "passed": passed,
        "failed": sum(r.verdict == "fail" for r in results),
        "skipped": sum(r.verdict == "skipped" for r in results),
        "failed_cases": failed,
    }
    if sabotage:
        ran = {r.case for r in results if r.verdict != "skipped"}
        should = sorted(r.case for r in results if r.verdict != "skipped" and set(r.depends_on) & set(sabotage))
        should = sorted(set(should) & ran)
        out["sabotage"] = {
            "safeguards": list(sabotage),
            "should_fail": should,
            "failed": failed,
            "as_expected": set(should) == set(failed),
        }
    return out


def summary_lines(info: dict[str, Any]) -> list[str]:
    lines = [f"{info['passed']} passed, {info['failed']} failed, {info['skipped']} skipped"]
    sab = info.get("sabotage")
    if sab:
        lines.append(f"sabotaged: {', '.join(sab['safeguards'])}")
        lines.append(f"  cases that depend on it (must fail): {', '.join(sab['should_fail']) or 'none'}")
        lines.append(f"  cases that failed:                   {', '.join(sab['failed']) or 'none'}")
        verdict = "yes" if sab["as_expected"] else "NO: the drill does not prove what it claims"
        lines.append(f"  exactly those: {verdict}")
    return lines
