"""Load policy documents from YAML (safe loader only), once, at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gateway.domain.contract import problems_of
from gateway.errors import ConfigError
from gateway.policy.model import PolicyDocument, ToolPolicy


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader, refusing a mapping that names a key twice (PyYAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` may be overridden on purpose
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key; construct_mapping reports it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> Any:
    """Raises:
    ConfigError: the file is missing or is not valid YAML.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: safe
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc


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
