"""Load policy documents from YAML (safe loader only), once, at start-up."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gateway.domain.contract import problems_of
from gateway.errors import ConfigError
from gateway.policy.model import PolicyDocument, SharedLimit, ToolPolicy
from gateway.yamlfile import read_yaml


def parse_policy(data: Any, source: str = "<policy>") -> PolicyDocument:
    """Raises:
    ConfigError: every problem of the document, one per line.
    """
    try:
        return PolicyDocument.model_validate(data)
    except ValidationError as exc:
        lines = [f"  {p['field']}: {p['problem']}" for p in problems_of(exc)]
        raise ConfigError(f"{source}: invalid policy:\n" + "\n".join(lines)) from None


@dataclass(frozen=True)
class PolicySet:
    """Every policy file merged: the currency, each tool's policy, the shared limits."""

    currency: str = "USD"
    tools: dict[str, ToolPolicy] = field(default_factory=dict)
    shared_limits: tuple[SharedLimit, ...] = ()


def load_policies(paths: list[Path]) -> tuple[str, dict[str, ToolPolicy]]:
    """Merge policy files. A tool named in two files stops loading: no silent override.

    Raises:
        ConfigError: a file is invalid, names a tool twice, or the files disagree on currency.
    """
    merged = load_policy_set(paths)
    return merged.currency, merged.tools


def load_policy_set(paths: list[Path]) -> PolicySet:
    """`load_policies`, with the shared limits of every file (a scope limited twice stops loading).

    Raises:
        ConfigError: as `load_policies`, or a tool or destination given two shared limits.
    """
    tools: dict[str, ToolPolicy] = {}
    seen: dict[str, Path] = {}
    shared: dict[str, SharedLimit] = {}
    currency: str | None = None
    for path in paths:
        doc = parse_policy(read_yaml(path), str(path))
        if currency is not None and doc.currency != currency:
            raise ConfigError(f"{path}: currency {doc.currency} differs from {currency} in {paths[0]}")
        currency = doc.currency
        for name, policy in doc.tools.items():
            if name in tools:
                raise ConfigError(f"{path}: tool {name!r} already has a policy in {seen[name]}")
            tools[name] = policy
            seen[name] = path
        for limit in doc.shared_limits:
            if limit.scope in shared:
                raise ConfigError(f"{path}: {limit.scope} has two shared limits; give it one")
            shared[limit.scope] = limit
    return PolicySet(currency or "USD", tools, tuple(shared.values()))
