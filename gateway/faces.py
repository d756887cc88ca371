"""Package faces: each package's `__init__.py` names its public surface, imported on first use.

A face reads like HTTPX's: the names imported from the package's leaves, and `__all__` listing
them. The imports sit under `if TYPE_CHECKING:`, so type checkers and readers see them while a
running process imports a leaf only when one of its names is first asked for:

    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from gateway.gate.pipeline import CallResult, Gate
    else:
        from gateway.faces import lazy as _lazy

        __getattr__, __dir__ = _lazy(__name__)

    __all__ = ["CallResult", "Gate"]

(`_lazy`: a face binds no public name it does not export.)
Importing any module of a package runs its `__init__` first: a face that imported its leaves
eagerly would make `warrant --help` load the stores and the MCP SDK (tests/unit/test_cli_startup.py),
and would tie the packages into import circles. tests/unit/test_package_faces.py holds every face
to its `__all__`.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module `__getattr__` and `__dir__` of the face of `package` (its `__name__`).

    The names are those its `__init__` imports under `if TYPE_CHECKING:` (read from its source
    once, when a name is first asked for). A name, once imported, is kept in the package's
    namespace, so asking again costs nothing."""
    module = sys.modules[package]
    table: dict[str, tuple[str, str]] | None = None

    def __getattr__(name: str) -> Any:
        nonlocal table
        if table is None:
            table = faced_names(module)
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        leaf, original = table[name]
        value = getattr(importlib.import_module(leaf), original)
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *getattr(module, "__all__", ())})

    return __getattr__, __dir__


def faced_names(module: Any) -> dict[str, tuple[str, str]]:
    """Each name the face of `module` (a package) imports under `if TYPE_CHECKING:`, with the
    module it comes from and its name there."""
    loader = module.__spec__.loader
    source = loader.get_source(module.__name__) if loader is not None else None
    if source is None:
        raise ImportError(f"the face of {module.__name__} needs its source")
    names: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module is not None:
                    if statement.level:
                        raise ImportError(f"the face of {module.__name__} imports by absolute names only")
                    for alias in statement.names:
                        names[alias.asname or alias.name] = (statement.module, alias.name)
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
