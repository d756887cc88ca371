"""The layers of gateway/, and the proof that every import points down them.

Every module under gateway/ is parsed with `ast`; every import of a gateway module counts, at
the top of a file, inside a function (a lazy import is still a dependency) or under
TYPE_CHECKING (a type is one too). A module's layer comes from its path: the package right
under gateway/ (`gateway/store/sql/...` is `store`), or the module itself for the few at the
root. From the bottom up:

     0  helpers   gateway (its __version__), errors, clock, ids, canonical, names, text,
                  yamlfile, backoff, bounded (the caches), faces (the packages' lazy faces),
                  accelerators (the fast paths' version fence and switches),
                  safeguards (the drill's switches: the store reads them)
     1  domain    the pure core
     2  policy    model, loader, engine: decisions over domain types
     3  store     the record; it speaks in domain types, never in the catalog's or the gate's
     4  observe   metrics and traces: over the store's reports and records; below the adapters,
                  since the lean MCP client (adapters/mcp/) traces its own requests
     5  adapters  the engines that reach real tools
     6  catalog   the adapters' tools under their exposed names, with policy and pins
     7  gate      one call from token to settle; in flight, limits, reconciliation
     8  tools     the warrant_* tools, above the gate they call (tools/calls.py routes them)
     9  runtime   watchdog, webhooks, retention, cancel relay, shutdown: beside the gate
    10  service   service.py, the gateway as one object for the fronts
    11  fronts    mcp, api, console, oauth, oidc: side by side; an edge between two of them is
                  allowed one way only (no cycle), e.g. console uses api's views and oauth's provider
    12  config    reads warrant.yaml into every owner's settings types, and builds the adapters it
                  names: above everything whose settings it reads, below the composition root
    13  app       the composition root: builds every object, by constructor
    14  commands  cli, drill: what a person runs

An import from a lower layer to a higher one fails, and so does any import cycle between two
packages (or root modules) and any cycle between two modules of one package: layers say which
way an edge may point, and a cycle would hide which way it does. `ALLOWED` lists the exceptions,
each with its reason; keep it short.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "helpers",
        frozenset(
            {
                "gateway",
                "errors",
                "clock",
                "ids",
                "canonical",
                "names",
                "text",
                "yamlfile",
                "backoff",
                "safeguards",
                "bounded",
                "faces",
                "accelerators",
            }
        ),
    ),
    ("domain", frozenset({"domain"})),
    ("policy", frozenset({"policy"})),
    ("store", frozenset({"store"})),
    ("observe", frozenset({"observe"})),
    ("adapters", frozenset({"adapters"})),
    ("catalog", frozenset({"catalog"})),
    ("gate", frozenset({"gate"})),
    ("tools", frozenset({"tools"})),
    ("runtime", frozenset({"runtime"})),
    ("service", frozenset({"service"})),
    ("fronts", frozenset({"mcp", "api", "console", "oauth", "oidc"})),
    ("config", frozenset({"config"})),
    ("app", frozenset({"app"})),
    ("commands", frozenset({"cli", "drill"})),
)

# (importing module, imported module) -> why it may stay. Upward edges and module cycles alike.
ALLOWED: dict[tuple[str, str], str] = {}


def modules(root: Path) -> dict[str, Path]:
    """Every module under root/gateway, by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted((root / "gateway").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The gateway modules `name` imports, wherever in the file. `from package import module` is an
    edge to the module (a package's __init__ runs for any import of its modules: no edge to it)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    found.add(target)
                elif base in known:
                    found.add(base)
    found.discard(name)
    return found


def graph(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


def unit(module: str) -> str:
    """The package right under gateway/, or the root module itself ("gateway" for the package's face)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "gateway"
    return parts[1]


def layer_of(unit_name: str) -> int | None:
    for index, (_, members) in enumerate(LAYERS):
        if unit_name in members:
            return index
    return None


def unplaced(root: Path) -> list[str]:
    return sorted({unit(m) for m in modules(root)} - {u for _, members in LAYERS for u in members})


def upward(edges: Mapping[str, set[str]]) -> list[str]:
    """Every import from a lower layer to a higher one that ALLOWED does not name."""
    found = []
    for importer, targets in sorted(edges.items()):
        low = layer_of(unit(importer))
        for target in sorted(targets):
            high = layer_of(unit(target))
            if low is not None and high is not None and low < high and (importer, target) not in ALLOWED:
                found.append(f"{importer} ({LAYERS[low][0]}) -> {target} ({LAYERS[high][0]})")
    return found


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def allowed_away(edges: Mapping[str, set[str]]) -> dict[str, set[str]]:
    return {a: {b for b in bs if (a, b) not in ALLOWED} for a, bs in edges.items()}


def package_cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    units: dict[str, set[str]] = defaultdict(set)
    for importer, targets in allowed_away(edges).items():
        for target in targets:
            if unit(importer) != unit(target):
                units[unit(importer)].add(unit(target))
    return cycles(units)


def module_cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    return cycles(allowed_away(edges))


# -- the tree as it is ------------------------------------------------------------------------


@functools.cache
def tree() -> dict[str, set[str]]:
    return graph(ROOT)


def test_every_package_and_root_module_has_a_layer() -> None:
    assert unplaced(ROOT) == [], "place it in LAYERS (and the docstring), where its imports say it belongs"


def test_every_import_points_down_or_across_a_layer() -> None:
    assert upward(tree()) == []


def test_no_two_packages_import_each_other() -> None:
    assert package_cycles(tree()) == []


def test_no_two_modules_import_each_other() -> None:
    assert module_cycles(tree()) == []


def test_every_allowed_edge_still_exists() -> None:
    stale = sorted(f"{a} -> {b}" for a, b in ALLOWED if b not in tree().get(a, set()))
    assert stale == [], "the exception is gone: remove it from ALLOWED"


# -- the checks themselves ----------------------------------------------------------------------


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for parent in path.parents:
            if parent == root:
                break
            (parent / "__init__.py").touch()
    return root


def test_a_planted_upward_import_fails_also_lazy_or_for_typing_only(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "gateway/gate/pipeline.py": "from gateway.store.base import Store\n",
            "gateway/store/base.py": "from gateway.errors import Refusal\n",
            "gateway/errors.py": "",
            "gateway/domain/lazy.py": "def f():\n    from gateway.gate import pipeline\n",
            "gateway/policy/typed.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gateway.store.base import Store\n"
            ),
        },
    )
    assert upward(graph(root)) == [
        "gateway.domain.lazy (domain) -> gateway.gate.pipeline (gate)",
        "gateway.policy.typed (policy) -> gateway.store.base (store)",
    ]


def test_a_planted_cycle_fails_between_packages_and_between_modules(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "gateway/api/routes.py": "from gateway.api import openapi\nfrom gateway.mcp.server import x\n",
            "gateway/api/openapi.py": "from gateway.api.routes import y\n",
            "gateway/mcp/server.py": "from gateway.api.routes import z\n",
        },
    )
    edges = graph(root)
    assert upward(edges) == []  # one layer: only the cycles give them away
    assert package_cycles(edges) == [["api", "mcp"]]
    assert module_cycles(edges) == [["gateway.api.openapi", "gateway.api.routes", "gateway.mcp.server"]]


def test_a_module_of_a_new_package_or_at_the_root_must_be_placed(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"gateway/errors.py": "", "gateway/helpers.py": "", "gateway/things/x.py": ""})
    assert unplaced(root) == ["helpers", "things"]
