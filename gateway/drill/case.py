"""What a drill case is: its name, what it expects, which safeguards it stands on, and its body.

A case body gets a started `World` (services up, gateway not yet started: the body starts it, with
failpoints for the restart mode) and the mode, and returns what it observed. It records every
expectation that did not hold on its `Findings`; the runner adds the checks every case shares
(gateway/drill/judge.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from gateway.drill.world import World

Mode = Literal["active", "restart"]
MODES: tuple[Mode, ...] = ("active", "restart")


@dataclass
class Findings:
    """What a case saw: a short account for the report, and every expectation that failed."""

    observed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def saw(self, text: str) -> None:
        self.observed.append(text)

    def expect(self, condition: bool, problem: str) -> bool:
        if not condition:
            self.problems.append(problem)
        return condition

    def equal(self, actual: object, expected: object, what: str) -> bool:
        return self.expect(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")


Body = Callable[[World, Mode, Findings], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    name: str
    category: str  # the heading of DRILL.md it drills
    expected: str  # one line for the report
    depends_on: frozenset[str]  # the safeguards whose sabotage must make it fail
    body: Body
    modes: tuple[Mode, ...] = MODES
    replicas: int = 1  # 2: needs two gateway replicas on one store (the PostgreSQL issue)


REGISTRY: dict[str, Case] = {}


def case(
    name: str, category: str, expected: str, depends_on: tuple[str, ...] = (), replicas: int = 1
) -> Callable[[Body], Body]:
    """Register the decorated body as a case."""

    def register(body: Body) -> Body:
        if name in REGISTRY:
            raise ValueError(f"two drill cases are named {name}")
        REGISTRY[name] = Case(name, category, expected, frozenset(depends_on), body, replicas=replicas)
        return body

    return register
