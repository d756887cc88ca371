"""The tool catalog: every adapter's tools under their exposed names, each with its policy.

Exposed names are `<adapter>__<tool>` (at most 48 characters: some clients add their own prefix
and cap names at 64 of `[A-Za-z0-9_-]`), or the tool's `expose_as` alias. A name that breaks
these rules, collides with another, or uses the reserved `warrant_` prefix stops start-up.
A tool no policy names is listed in the catalog but refused at the gate: fail closed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from gateway.adapters.base import Adapter, ToolDefinition
from gateway.domain.admission import Reservation
from gateway.domain.units import parse_money
from gateway.errors import ConfigError
from gateway.policy.model import ToolPolicy

ADAPTER_NAME = re.compile(r"^[a-z][a-z0-9]{0,15}$")
EXPOSED_NAME = re.compile(r"^[A-Za-z0-9_-]{1,48}$")
RESERVED_PREFIX = "warrant_"
DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class ToolSpec:
    name: str  # exposed
    adapter: Adapter
    definition: ToolDefinition
    definition_sha256: str
    policy: ToolPolicy | None
    timeout: float
    validator: Validator
    cost_spend: int
    cost_max: int | None

    @property
    def tool(self) -> str:
        return self.definition.name

    @property
    def is_write(self) -> bool:
        # Without a policy the call is refused anyway; treat the unknown as the dangerous kind.
        return self.policy is None or self.policy.effect == "write"

    def reservation(self) -> Reservation:
        held = self.cost_max if self.cost_max is not None else self.cost_spend
        return Reservation(spend=held, tool_calls=1, writes=1 if self.is_write else 0)

    def argument_problems(self, arguments: Any) -> list[str]:
        problems = []
        for error in sorted(self.validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in error.absolute_path) or "(arguments)"
            problems.append(f"{where}: {error.message}"[:300])
        return problems[:20]


def exposed_name(adapter: str, definition: ToolDefinition) -> str:
    return definition.expose_as or f"{adapter}__{definition.name}"


class Catalog:
    """Raises (at construction): ConfigError naming every problem."""

    def __init__(self, adapters: Iterable[Adapter], policies: dict[str, ToolPolicy], currency: str = "USD") -> None:
        self.currency = currency
        self._tools: dict[str, ToolSpec] = {}
        problems: list[str] = []
        seen_adapters: set[str] = set()
        for adapter in adapters:
            if not ADAPTER_NAME.fullmatch(adapter.name):
                problems.append(f"adapter name {adapter.name!r} must match {ADAPTER_NAME.pattern}")
                continue
            if adapter.name in seen_adapters:
                problems.append(f"two adapters are named {adapter.name!r}")
                continue
            seen_adapters.add(adapter.name)
            for definition in adapter.definitions():
                name = exposed_name(adapter.name, definition)
                problem = self._name_problem(name, adapter.name, definition)
                if problem:
                    problems.append(problem)
                    continue
                try:
                    validator_cls = jsonschema.validators.validator_for(definition.input_schema)
                    validator_cls.check_schema(definition.input_schema)
                except jsonschema.SchemaError as exc:
                    problems.append(f"{name}: input_schema is not a valid JSON Schema: {exc.message}")
                    continue
                policy = policies.get(name)
                try:
                    cost_spend = parse_money(policy.cost.spend, currency) if policy else 0
                    cost_max = parse_money(policy.cost.max, currency) if policy and policy.cost.max else None
                except ValueError as exc:
                    problems.append(f"{name}: cost: {exc}")
                    continue
                self._tools[name] = ToolSpec(
                    name=name,
                    adapter=adapter,
                    definition=definition,
                    definition_sha256=definition.sha256(),
                    policy=policy,
                    timeout=definition.timeout or DEFAULT_TIMEOUT,
                    validator=validator_cls(definition.input_schema),
                    cost_spend=cost_spend,
                    cost_max=cost_max,
                )
        if problems:
            raise ConfigError("the tool catalog is invalid:\n" + "\n".join(f"  {p}" for p in problems))

    def _name_problem(self, name: str, adapter: str, definition: ToolDefinition) -> str | None:
        if name.startswith(RESERVED_PREFIX):
            return f"{adapter}.{definition.name}: the prefix {RESERVED_PREFIX!r} is reserved for the gateway"
        if not EXPOSED_NAME.fullmatch(name):
            return (
                f"{adapter}.{definition.name}: exposed name {name!r} must be 1-48 characters of [A-Za-z0-9_-]; "
                "give the tool an expose_as alias"
            )
        if name in self._tools:
            other = self._tools[name]
            return f"{adapter}.{definition.name}: exposed name {name!r} collides with {other.adapter.name}.{other.tool}"
        return None

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
