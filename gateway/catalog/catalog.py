"""The tool catalog: every adapter's tools under their exposed names, each with its policy.

Exposed names are `<adapter>__<tool>` (at most 48 characters: some clients add their own prefix
and cap names at 64 of `[A-Za-z0-9_-]`), or the tool's `expose_as` alias. A name that breaks
these rules, collides with another, or uses the reserved `warrant_` prefix stops start-up.
A tool no policy names is listed in the catalog but refused at the gate: fail closed.

The catalog follows its adapters: a downstream MCP server may add, drop or change tools at run
time. Adapters that change call their listeners; `invalidate()` makes the next lookup rebuild
from `adapter.definitions()`. A problem found at start-up (`check()`) stops it; one found later
leaves the offending tool out (an established tool keeps its name) and is logged.

Definitions of adapters with `pin` set are compared with their pins (`gateway/catalog/pins.py`): only a
tool whose definition matches its pin is listed (`iter`); `get` still finds the others, so the
gate can refuse them `tool_definition_changed` and the operator API can show them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import jsonschema
from jsonschema.protocols import Validator

from gateway import accelerators
from gateway.adapters.base import Adapter, ToolDefinition
from gateway.domain.admission import Reservation
from gateway.domain.compensation import Compensation
from gateway.domain.contract import ApprovalRule
from gateway.domain.formats import format_checker
from gateway.domain.limits import SharedCap, parse_rate
from gateway.domain.quick_schema import Check, compile_check
from gateway.domain.retries import RetryPolicy
from gateway.domain.shared_limits import SLOT_GRACE_S
from gateway.domain.units import parse_money
from gateway.errors import ConfigError
from gateway.names import ADAPTER_NAME, EXPOSED_NAME, RESERVED_PREFIX
from gateway.policy.model import SharedLimit, ToolPolicy
from gateway.store.records import ToolPin

log = logging.getLogger("warrant.catalog")

DEFAULT_TIMEOUT = 30.0


class PinState(StrEnum):
    TRUSTED = "trusted"  # defined in this gateway's configuration: nothing to pin
    PINNED = "pinned"  # matches its pinned definition
    CHANGED = "changed"  # differs from its pinned definition: refused until an operator accepts it
    NEW = "new"  # never pinned: refused until an operator accepts it

    @property
    def callable(self) -> bool:
        return self in (PinState.TRUSTED, PinState.PINNED)


class PinBook(Protocol):
    """Where the catalog finds the pinned definitions (`gateway.catalog.pins.Pins`)."""

    def pin(self, name: str) -> ToolPin | None: ...

    async def refresh(self) -> bool:
        """Reload the pins (another replica may have accepted one); True when it did."""
        ...


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the gate calls it: an adapter's definition under its exposed name, with the
    policy, costs, timeout and argument validator the gate decides with.

    `name` is the exposed name (`<adapter>__<tool>` or the `expose_as` alias), `tool` the name the
    adapter knows it by; `definition_sha256` fingerprints the definition (name, description, input
    schema) that `pin_state` compares with its pin. `cost_spend` and `cost_max` are in the minor
    units of the gateway's currency. `quick_check`, when the schema allows one, answers "valid"
    without `jsonschema`; it never answers "invalid": `argument_faults` then asks the validator.

    Invariants: a spec without a policy is listed but refused at the gate (fail closed), and
    counts as a write; only a spec whose `pin_state` is callable is listed (`Catalog.__iter__`).
    Built by the `Catalog` only (`Catalog._spec`), again whenever its adapter's tools change;
    frozen: a call keeps the spec it was admitted with.
    """

    name: str  # exposed
    adapter: Adapter
    definition: ToolDefinition
    definition_sha256: str
    policy: ToolPolicy | None
    timeout: float
    validator: Validator
    cost_spend: int
    cost_max: int | None
    pin_state: PinState = PinState.TRUSTED
    pinned: ToolPin | None = None
    read_only_hint: bool = False  # the adapter trusts it and the (pinned) definition says read-only
    quick_check: Check | None = None  # True: the arguments are valid (gateway/domain/quick_schema.py)

    @property
    def tool(self) -> str:
        return self.definition.name

    @property
    def is_write(self) -> bool:
        # Without a policy the call is refused anyway; treat the unknown as the dangerous kind.
        if self.policy is None:
            return True
        if self.policy.effect is None:
            return not self.read_only_hint
        return self.policy.effect == "write"

    def reservation(self) -> Reservation:
        held = self.cost_max if self.cost_max is not None else self.cost_spend
        return Reservation(spend=held, tool_calls=1, writes=1 if self.is_write else 0)

    def argument_problems(self, arguments: Any) -> list[str]:
        return [f"{f['field']}: {f['problem']}" for f in self.argument_faults(arguments)]

    def argument_faults(self, arguments: Any) -> list[dict[str, str]]:
        """Each way the arguments break the input schema: {field, rule (the schema keyword), problem}."""
        if self.quick_check is not None and self.quick_check(arguments):
            return []  # what jsonschema would find: nothing
        faults = []
        for error in sorted(self.validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
            path = [str(p) for p in error.absolute_path]
            missing = _REQUIRED.fullmatch(error.message) if error.validator == "required" else None
            if missing is not None:
                path.append(missing.group(1))  # the field that is missing, not the object that lacks it
            field = "/".join(path) or "(arguments)"
            faults.append({"field": field[:200], "rule": str(error.validator), "problem": error.message[:300]})
        return faults[:20]


_REQUIRED = re.compile(r"'(.{1,200})' is a required property")

FORMAT_CHECKER = format_checker()  # `format` is asserted: gateway/domain/formats.py

_DIALECTS: dict[type[Any], str] = {
    jsonschema.Draft6Validator: "draft6",
    jsonschema.Draft7Validator: "draft7",
    jsonschema.Draft201909Validator: "draft2019-09",
    jsonschema.Draft202012Validator: "draft2020-12",
}


def quick_check_of(validator: Validator) -> Check | None:
    """The quick check of the validator's schema, when its dialect and keywords allow one.

    With a format checker (the gateway's validators have one), a schema naming a `format` is
    left to `jsonschema`, which asserts it."""
    dialect = _DIALECTS.get(type(validator))
    if dialect is None:
        return None
    formats = getattr(validator, "format_checker", None) is not None
    return compile_check(validator.schema, dialect, formats=formats)


def exposed_name(adapter: str, definition: ToolDefinition) -> str:
    return definition.expose_as or f"{adapter}__{definition.name}"


class Catalog:
    """Raises (at construction): ConfigError naming every problem.

    `quick_schema`: whether argument checks start with the compiled quick check (the accelerator of
    that name, gateway/accelerators.py); None: as that module decides for the installed jsonschema."""

    def __init__(
        self,
        adapters: Iterable[Adapter],
        policies: dict[str, ToolPolicy],
        currency: str = "USD",
        *,
        quick_schema: bool | None = None,
        shared_limits: Iterable[SharedLimit] = (),
    ) -> None:
        """`shared_limits`: the policies' limits shared by every run (gateway/domain/shared_limits.py)."""
        self.currency = currency
        self._quick = accelerators.default().on(accelerators.QUICK_SCHEMA) if quick_schema is None else quick_schema
        self.pins: PinBook | None = None
        self._adapters = list(adapters)
        self._policies = policies
        self._tools: dict[str, ToolSpec] = {}
        self._dirty = False
        self._reported: set[str] = set()
        self._shared_limits = tuple(shared_limits)
        self._shared: tuple[dict[str, ToolSpec], dict[str, tuple[SharedCap, ...]]] = ({}, {})
        self.check()

    def attach_pins(self, pins: PinBook) -> None:
        self.pins = pins
        self.invalidate()

    def invalidate(self) -> None:
        """The adapters' definitions or the pins changed: rebuild at the next lookup."""
        self._dirty = True

    def check(self) -> None:
        """Rebuild now. Raises: ConfigError naming every problem (start-up)."""
        tools, problems = self._build({})
        problems += self._shared_problems()
        problems += compensation_problems(tools, self._policies)
        if problems:
            raise ConfigError("the tool catalog is invalid:\n" + "\n".join(f"  {p}" for p in problems))
        self._tools, self._dirty = tools, False

    def _fresh(self) -> dict[str, ToolSpec]:
        if self._dirty:
            self._dirty = False
            tools, problems = self._build(self._tools)
            for problem in problems:
                if problem not in self._reported:
                    self._reported.add(problem)
                    log.error("tool left out of the catalog: %s", problem)
            self._tools = tools
        return self._tools

    def _build(self, previous: dict[str, ToolSpec]) -> tuple[dict[str, ToolSpec], list[str]]:
        tools: dict[str, ToolSpec] = {}
        problems: list[str] = []
        seen_adapters: set[str] = set()
        candidates: list[ToolSpec] = []
        for adapter in self._adapters:
            if not ADAPTER_NAME.fullmatch(adapter.name):
                problems.append(f"adapter name {adapter.name!r} must match {ADAPTER_NAME.pattern}")
                continue
            if adapter.name in seen_adapters:
                problems.append(f"two adapters are named {adapter.name!r}")
                continue
            seen_adapters.add(adapter.name)
            for definition in adapter.definitions():
                spec = self._spec(adapter, definition, problems)
                if spec is not None:
                    candidates.append(spec)
        by_name: dict[str, list[ToolSpec]] = {}
        for spec in candidates:
            by_name.setdefault(spec.name, []).append(spec)
        for name, specs in by_name.items():
            kept = specs
            if len(specs) > 1:
                # An established tool keeps its name at run time; at start-up every collision stops it.
                before = previous.get(name)
                kept = [s for s in specs if before is not None and (s.adapter, s.tool) == (before.adapter, before.tool)]
                for spec in specs:
                    if not any(spec is k for k in kept):
                        others = ", ".join(f"{o.adapter.name}.{o.tool}" for o in specs if o is not spec)
                        where = f"{spec.adapter.name}.{spec.tool}"
                        problems.append(f"{where}: exposed name {name!r} collides with {others}")
            if kept:
                tools[name] = kept[0]
        return tools, problems

    def _spec(self, adapter: Adapter, definition: ToolDefinition, problems: list[str]) -> ToolSpec | None:
        name = exposed_name(adapter.name, definition)
        problem = self._name_problem(name, adapter.name, definition)
        if problem:
            problems.append(problem)
            return None
        try:
            validator_cls = jsonschema.validators.validator_for(definition.input_schema)
            validator_cls.check_schema(definition.input_schema)
        except jsonschema.SchemaError as exc:
            problems.append(f"{name}: input_schema is not a valid JSON Schema: {exc.message}")
            return None
        policy = self._policies.get(name)
        try:
            cost_spend = parse_money(policy.cost.spend, self.currency) if policy else 0
            cost_max = parse_money(policy.cost.max, self.currency) if policy and policy.cost.max else None
        except ValueError as exc:
            problems.append(f"{name}: cost: {exc}")
            return None
        sha = definition.sha256()
        state, pinned = PinState.TRUSTED, None
        trusted_annotations = definition.annotations
        if adapter.pin is not None:
            pinned = self.pins.pin(name) if self.pins is not None else None
            if pinned is None:
                state = PinState.NEW
            elif pinned.definition_sha256 != sha:
                state = PinState.CHANGED
            else:
                state = PinState.PINNED
            # The hint that counts is the one an operator (or first use) trusted with the pin.
            trusted_annotations = pinned.definition.get("annotations") if pinned is not None else None
        hint = bool(adapter.trust_read_only_hint and (trusted_annotations or {}).get("readOnlyHint") is True)
        validator = validator_cls(definition.input_schema, format_checker=FORMAT_CHECKER)
        return ToolSpec(
            name=name,
            adapter=adapter,
            definition=definition,
            definition_sha256=sha,
            policy=policy,
            timeout=definition.timeout or DEFAULT_TIMEOUT,
            validator=validator,
            quick_check=quick_check_of(validator) if self._quick else None,
            cost_spend=cost_spend,
            cost_max=cost_max,
            pin_state=state,
            pinned=pinned,
            read_only_hint=hint,
        )

    def _name_problem(self, name: str, adapter: str, definition: ToolDefinition) -> str | None:
        if name.startswith(RESERVED_PREFIX):
            return f"{adapter}.{definition.name}: the prefix {RESERVED_PREFIX!r} is reserved for the gateway"
        if not EXPOSED_NAME.fullmatch(name):
            return (
                f"{adapter}.{definition.name}: exposed name {name!r} must be 1-48 characters of [A-Za-z0-9_-]; "
                "give the tool an expose_as alias"
            )
        return None

    def _shared_problems(self) -> list[str]:
        adapters = {adapter.name for adapter in self._adapters}
        problems = []
        for limit in self._shared_limits:
            if limit.tool is not None and limit.tool not in self._policies:
                problems.append(f"shared_limits: {limit.scope}: no policy names this tool")
            if limit.destination is not None and limit.destination not in adapters:
                problems.append(f"shared_limits: {limit.scope}: no adapter has this name")
        return problems

    def compensation_of(self, name: str) -> tuple[Compensation, ToolSpec] | None:
        """The compensating call the policy names for this exposed tool, and that tool's spec (None:
        the tool has none, or its compensating tool is not in the catalog now)."""
        policy = self._policies.get(name)
        if policy is None or policy.compensate is None:
            return None
        spec = self.get(policy.compensate.tool)
        return None if spec is None else (policy.compensate, spec)

    def compensating_tools(self) -> dict[str, str]:
        """Each exposed tool with a `compensate:` in its policy, and the tool that undoes it."""
        return {name: p.compensate.tool for name, p in self._policies.items() if p.compensate is not None}

    def shared_for(self, name: str) -> tuple[SharedCap, ...]:
        """The shared limits a call of this exposed tool counts against (none: not limited).

        Rebuilt with the catalog: a destination's limit counts the tools its adapter lists now."""
        if not self._shared_limits:
            return ()
        tools = self._fresh()
        built, caps = self._shared
        if built is not tools:
            caps = self._shared_caps(tools)
            self._shared = (tools, caps)
        return caps.get(name, ())

    def _shared_caps(self, tools: dict[str, ToolSpec]) -> dict[str, tuple[SharedCap, ...]]:
        caps: dict[str, list[SharedCap]] = {}
        for limit in self._shared_limits:
            if limit.tool is not None:
                members = [tools[limit.tool]] if limit.tool in tools else []
            else:
                members = [spec for spec in tools.values() if spec.adapter.name == limit.destination]
            if not members:
                continue
            cap = SharedCap(
                scope=limit.scope,
                tools=tuple(sorted(spec.name for spec in members)),
                max_concurrent=limit.max_concurrent,
                rate=parse_rate(limit.rate) if limit.rate is not None else None,
                hold_s=max(spec.timeout for spec in members) + SLOT_GRACE_S,
            )
            for spec in members:
                caps.setdefault(spec.name, []).append(cap)
        return {name: tuple(found) for name, found in caps.items()}

    def approval_floor(self) -> dict[str, ApprovalRule]:
        """Each tool the policies gate with an approval, and that rule: what no contract may loosen."""
        return {name: p.approval for name, p in self._policies.items() if p.approval is not None}

    def retry_floor(self) -> dict[str, RetryPolicy | None]:
        """Each tool a policy names, and its retries (None: never retried): what a contract may only narrow."""
        return {name: p.retries for name, p in self._policies.items()}

    def get(self, name: str) -> ToolSpec | None:
        """The tool under this exposed name, whatever its pin state."""
        return self._fresh().get(name)

    def all(self) -> list[ToolSpec]:
        """Every tool, whatever its pin state (the operator API)."""
        return list(self._fresh().values())

    def __iter__(self) -> Iterator[ToolSpec]:
        """The tools that may be called: trusted, or matching their pins."""
        return iter([spec for spec in self._fresh().values() if spec.pin_state.callable])

    def __len__(self) -> int:
        return sum(1 for spec in self._fresh().values() if spec.pin_state.callable)


def compensation_problems(tools: Mapping[str, ToolSpec], policies: Mapping[str, ToolPolicy]) -> list[str]:
    """`compensate:` at load: a write's, naming a write of the catalog (docs/compensation.md)."""
    problems = []
    for name, policy in policies.items():
        compensation = policy.compensate
        if compensation is None:
            continue
        spec, target = tools.get(name), tools.get(compensation.tool)
        if spec is None:  # a policy for a tool this gateway does not front: inert, as every such policy
            continue
        if not spec.is_write:
            problems.append(f"{name}: compensate: only a write has a compensating call")
        if target is None:
            problems.append(f"{name}: compensate.tool {compensation.tool!r} is not a tool of the catalog")
        elif target.policy is None:
            problems.append(f"{name}: compensate.tool {compensation.tool!r} has no policy: it would be refused")
        elif not target.is_write:
            problems.append(f"{name}: compensate.tool {compensation.tool!r} is not a write")
        elif compensation.tool == name:
            problems.append(f"{name}: compensate.tool names the tool itself")
    return problems
