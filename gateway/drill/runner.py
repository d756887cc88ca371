"""Run drill cases, each in a world of its own, several at once, and judge each one."""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gateway.drill import postgres as pg
from gateway.drill.case import Case, Findings, Mode
from gateway.drill.judge import judge
from gateway.drill.world import DrillError, World

CASE_TIMEOUT = 180.0  # seconds: a case that takes longer has hung, and fails
STARTING = 2  # gateways starting at once, across the worlds of one drill (each start is CPU-bound)


@dataclass
class Result:
    case: str
    category: str
    mode: str
    expected: str
    observed: str
    duplicates: int
    overspend: list[str]
    verdict: str  # pass, fail, skipped
    problems: list[str] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)
    seconds: float = 0.0
    states: dict[str, int] = field(default_factory=dict)
    folder: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def run_one(
    case: Case,
    mode: Mode,
    base: Path,
    sabotage: tuple[str, ...],
    postgres: str | None = None,
    absent: str = "",
    starting: asyncio.Semaphore | None = None,
) -> Result:
    """One case in one mode, in a world of its own. A two-replica case runs on the PostgreSQL server
    `postgres`; it is skipped, with the reason, when there is none (`absent` says why)."""
    started = time.monotonic()
    folder = base / f"{case.name}.{mode}"

    def result(observed: str, verdict: str, problems: list[str], **more: Any) -> Result:
        return Result(
            case=case.name,
            category=case.category,
            mode=mode,
            expected=case.expected,
            observed=observed,
            verdict=verdict,
            problems=problems,
            depends_on=sorted(case.depends_on),
            seconds=round(time.monotonic() - started, 1),
            folder=str(folder),
            **{"duplicates": 0, "overspend": [], **more},
        )

    if case.replicas > 1 and (absent or not postgres):
        return result(f"not run: two gateway replicas need PostgreSQL: {absent or 'no server given'}", "skipped", [])
    findings = Findings()
    try:
        world = World(folder, sabotage=sabotage, replicas=case.replicas, postgres=postgres, starting=starting)
        async with world:
            world.keep_store = True  # evidence, unless the case passes
            try:
                await asyncio.wait_for(case.body(world, mode, findings), CASE_TIMEOUT)
            except TimeoutError:
                findings.problems.append(f"the case did not finish within {CASE_TIMEOUT:g} s")
            except DrillError as exc:
                findings.problems.append(f"the drill could not go on: {exc}")
            for i, replica in enumerate(world.replicas):  # the judge asks every replica
                if not replica.running:
                    await world.kill_gateway(replica=i)
                    await world.start_gateway(replica=i)
            verdict = await judge(world)
            world.keep_store = bool(findings.problems or verdict.problems)
    except Exception as exc:  # the drill's own machinery: reported as a failed case, never hidden
        detail = "".join(traceback.format_exception_only(exc)).strip()
        return result("; ".join(findings.observed), "fail", [*findings.problems, f"drill error: {detail}"])
    problems = findings.problems + verdict.problems
    return result(
        "; ".join(findings.observed),
        "pass" if not problems else "fail",
        problems,
        duplicates=verdict.duplicates,
        overspend=verdict.overspend,
        states=dict(verdict.states),
    )


async def run_all(
    plan: Iterable[tuple[Case, Mode]],
    base: Path,
    sabotage: tuple[str, ...] = (),
    jobs: int = 3,
    postgres: str | None = None,
) -> list[Result]:
    """Run every (case, mode) of the plan, `jobs` at a time; results in the plan's order. Two-replica
    cases run on the PostgreSQL server `postgres`, asked once whether it answers."""
    plan = list(plan)
    limit = asyncio.Semaphore(jobs)
    starting = asyncio.Semaphore(STARTING)
    absent: str | None = None
    if any(c.replicas > 1 for c, _ in plan):
        absent = await asyncio.to_thread(pg.problem, postgres) if postgres else "no server given"

    async def one(case: Case, mode: Mode) -> Result:
        async with limit:
            return await run_one(case, mode, base, sabotage, postgres, absent or "", starting)

    return list(await asyncio.gather(*(one(c, m) for c, m in plan)))
