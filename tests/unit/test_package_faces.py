"""Every package's `__init__.py` names its public surface in `__all__`, and exports exactly that.

A face (gateway/faces.py) imports its names from the package's own leaves under `if TYPE_CHECKING:`
and resolves them on first use; `gateway.cli` and `gateway.drill.cases` bind theirs as they load.
What a face names: what the rest of the gateway imports from the package, and its central types;
a constant that only tests read stays in its leaf.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from gateway.faces import faced_names

ROOT = Path(__file__).resolve().parents[2]
# Names an `__init__` may bind without exporting them: the machinery of a face.
MACHINERY = {"TYPE_CHECKING", "annotations"}


def _packages() -> list[str]:
    found = []
    for init in sorted((ROOT / "gateway").rglob("__init__.py")):
        name = ".".join(init.parent.relative_to(ROOT).parts)
        if name == "gateway":
            continue  # the root: its modules are the composition root and the shared helpers
        found.append(name)
    return found


PACKAGES = _packages()


def _source(package: str) -> ast.Module:
    return ast.parse((ROOT / package.replace(".", "/") / "__init__.py").read_text())


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _bound_as_it_loads(tree: ast.Module) -> set[str]:
    """The names an `__init__` binds at the top level when it runs (not under TYPE_CHECKING)."""
    names: set[str] = set()
    for node in tree.body:
        if _is_type_checking(node):
            continue
        if isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _public(name: str) -> bool:
    return not name.startswith("_")


def _ruff_order(name: str) -> tuple[int, str]:
    """RUF022's order: SCREAMING_CASE, then CamelCase, then the rest, each alphabetical."""
    if len(name) > 1 and name.upper() == name:
        return (0, name)
    return (1 if name[0].isupper() else 2, name)


def _submodules(package: str) -> set[str]:
    module = importlib.import_module(package)
    return {info.name for info in pkgutil.iter_modules(module.__path__)}


def test_every_package_has_a_face() -> None:
    assert len(PACKAGES) >= 18, PACKAGES
    for name in ("gateway.adapters.mcp", "gateway.domain", "gateway.gate", "gateway.mcp.accelerators", "gateway.tools"):
        assert name in PACKAGES


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_a_sorted_list_of_public_names_without_repeats(package: str) -> None:
    exported = importlib.import_module(package).__all__
    assert isinstance(exported, list) and exported, f"{package}: __all__ is a non-empty list"
    assert all(isinstance(n, str) and _public(n) for n in exported), exported
    assert len(set(exported)) == len(exported), f"{package}: a name twice in __all__"
    assert exported == sorted(exported, key=_ruff_order), f"{package}: __all__ in RUF022's order"


@pytest.mark.parametrize("package", PACKAGES)
def test_the_face_exports_exactly_what_all_names(package: str) -> None:
    module = importlib.import_module(package)
    tree = _source(package)
    lazy = faced_names(module)
    eager = {
        name
        for name in _bound_as_it_loads(tree)
        if _public(name) and name not in MACHINERY and not isinstance(getattr(module, name, None), types.ModuleType)
    }
    assert not lazy.keys() & eager, f"{package}: names both lazy and eager"
    assert set(module.__all__) == lazy.keys() | eager, (
        f"{package}: __all__ and the face differ: "
        f"not exported {sorted((lazy.keys() | eager) - set(module.__all__))}, "
        f"not in the face {sorted(set(module.__all__) - (lazy.keys() | eager))}"
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_each_name_is_the_leafs_own_and_comes_from_inside_the_package(package: str) -> None:
    module = importlib.import_module(package)
    submodules = _submodules(package)
    for name, (leaf, original) in faced_names(module).items():
        assert leaf.startswith(f"{package}."), f"{package}.{name} comes from {leaf}, outside the package"
        assert name == original, f"{package}.{name}: a face names things as their leaf does"
        # A lazy name that is also a submodule would be the one or the other by import order.
        assert name not in submodules, f"{package}.{name} is also a submodule"
        assert getattr(module, name) is getattr(importlib.import_module(leaf), original)
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.startswith(f"{package}."), (
                f"{package}.{name} is defined in {value.__module__}: a face re-exports only its own leaves"
            )


def test_importing_a_face_imports_none_of_its_leaves() -> None:
    """Importing any module of a package runs its face: a face that imported its leaves would
    make every import pay for the whole package (and `warrant --help` load the MCP SDK). A face's
    parent packages load with it, as Python imports them."""
    lazy = [p for p in PACKAGES if "_lazy(__name__)" in (ROOT / p.replace(".", "/") / "__init__.py").read_text()]
    assert len(lazy) >= 16
    script = (
        "import importlib, sys\n"
        "import gateway.faces\n"
        "before = set(sys.modules)\n"
        f"for name in {lazy!r}:\n"
        "    importlib.import_module(name)\n"
        f"lazy = {lazy!r}\n"
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('gateway.') and m not in lazy\n"
        "             and not any(face.startswith(m + '.') for face in lazy)))"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"
