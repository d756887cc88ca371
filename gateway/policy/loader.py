"""Load policy documents from YAML (safe loader only), once, at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gateway.domain.contract import problems_of
from gateway.errors import ConfigError
from gateway.policy.model import PolicyDocument, ToolPolicy
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


def load_policies(paths: list[Path]) -> tuple[str, dict[str, ToolPolicy]]:
    """Merge policy files. A tool named in two files stops loading: no silent override.

    Raises:
        ConfigError: a file is invalid, names a tool twice, or the files disagree on currency.
    """
    tools: dict[str, ToolPolicy] = {}
    seen: dict[str, Path] = {}
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
    return currency or "USD", tools
