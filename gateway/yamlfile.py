"""YAML in, the safe way: PyYAML's safe loader, refusing a mapping that names a key twice.

Every YAML the gateway reads (configuration, adapters, policies, contracts given to the CLI)
comes through here. Light on purpose: the CLI imports it without the policy engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gateway.errors import ConfigError


class UniqueKeyLoader(yaml.SafeLoader):
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


def parse_yaml(text: str) -> Any:
    """Raises: yaml.YAMLError for text that is not valid YAML (a duplicate key included)."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader subclass: safe


def read_yaml(path: Path) -> Any:
    """Raises:
    ConfigError: the file is missing or is not valid YAML.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        return parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
