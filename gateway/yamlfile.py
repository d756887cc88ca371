"""YAML in, the safe way: PyYAML's safe loader, refusing a mapping that names a key twice.

Every YAML the gateway reads (configuration, adapters, policies, contracts given to the CLI)
comes through here. Light on purpose: the CLI imports it without the policy engine.

Hostile files are refused with a yaml.YAMLError (ConfigError from `read_yaml`) naming a line,
never another exception and never unbounded work: only the safe loader's tags (no
`!!python/...`); a document whose aliases would expand past `MAX_NODES` nodes (billion laughs)
or that contains itself (`&a [*a]`); nesting past `MAX_DEPTH`; a lone surrogate (`"\\ud800"`,
which no UTF-8 file, store or JSON document can carry); a scalar the safe constructor cannot
convert (`!!float x`, `!!int ''`, an integer of more than 4300 digits). `read_yaml` refuses a file larger
than `MAX_BYTES` or not in UTF-8. Pinned by tests/hostile/test_yaml_loaders.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gateway.errors import ConfigError

MAX_BYTES = 16 * 1024 * 1024  # a large OpenAPI document is a few MB
MAX_NODES = 1_000_000  # nodes of the document with every alias expanded
MAX_DEPTH = 200  # nesting of collections; deeper is refused before the constructor recurses


class UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader, refusing a mapping that names a key twice (PyYAML keeps the last silently)."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """Refuse nesting past MAX_DEPTH as the composer reaches it: the parser is pulled one event
        at a time, so 10,000 opening brackets cost MAX_DEPTH levels of work, not 10,000."""
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(None, None, f"collections nested more than {MAX_DEPTH} deep", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        _check_expanded(node)
        return self.construct_document(node)

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


def _problem(node: yaml.Node, problem: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


def _check_expanded(root: yaml.Node) -> None:
    """Refuse a node graph that contains itself, nests past MAX_DEPTH, expands past MAX_NODES,
    or carries a lone surrogate. Iterative, and each shared (aliased) node is sized once.

    Raises: yaml.constructor.ConstructorError naming the node's line."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    depth = 0
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            depth -= 1
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > MAX_NODES:
                raise _problem(node, f"the document expands to more than {MAX_NODES} nodes (aliases)")
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _problem(node, "an alias refers to a node that contains it")
        if isinstance(node, yaml.ScalarNode):
            try:
                node.value.encode("utf-8")
            except UnicodeEncodeError:
                raise _problem(node, "a lone surrogate (\\ud800-\\udfff) is not text") from None
            sizes[key] = 1
            continue
        depth += 1
        if depth > MAX_DEPTH:
            raise _problem(node, f"collections nested more than {MAX_DEPTH} deep")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def parse_yaml(text: str) -> Any:
    """Raises: yaml.YAMLError for text that is not valid YAML (a duplicate key, a hostile
    document and a scalar that cannot be converted included)."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader subclass: safe
    except yaml.YAMLError:
        raise
    except RecursionError:  # the parser nests before any node exists to check
        raise yaml.YAMLError(f"collections nested more than {MAX_DEPTH} deep") from None
    except (ValueError, TypeError, OverflowError, IndexError, KeyError, AttributeError) as exc:
        # The safe constructor's own conversions and slips (`!!int ''` is an IndexError in PyYAML 6).
        raise yaml.YAMLError(f"a value cannot be read: {exc}") from None


def read_text(path: Path) -> str:
    """A document's text, read to at most MAX_BYTES.

    Raises: ConfigError: the file is missing, too large or not UTF-8."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}: not UTF-8 text (line {line}, byte {exc.start})") from None


def read_yaml(path: Path) -> Any:
    """Raises:
    ConfigError: the file is missing, too large, not UTF-8 or not valid YAML.
    """
    text = read_text(path)
    try:
        return parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
