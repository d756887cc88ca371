"""bench/ reaches the gateway through its faces only (issue 22: "the bench into internals").

Every `bench/*.py` is parsed with `ast`; every import of a gateway module counts, wherever it
stands in the file (a lazy import inside a function is still one). An import may name the package
root `gateway`, one of its root modules (`gateway.clock`: the shared helpers are their own face),
or a package, whose `__init__.py` names its public surface in `__all__`
(gateway/faces.py): `from gateway.store import Principal`, `from gateway.store.sqlite import
SQLiteStore`. A leaf module of a package (`gateway.store.records`), or a name the package's
`__all__` does not list, fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _all_of(init: Path) -> set[str]:
    for node in ast.parse(init.read_text(), str(init)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def _kind(root: Path, module: str) -> str:
    """ "package", "root" (gateway itself or a module right under it), "leaf" or "missing"."""
    path = root.joinpath(*module.split("."))
    if (path / "__init__.py").is_file():
        return "root" if module == "gateway" else "package"
    if path.with_suffix(".py").is_file():
        return "root" if module.count(".") == 1 else "leaf"
    return "missing"


def leaf_imports(root: Path) -> list[str]:
    """Every import of bench/*.py under `root` that goes around a face, as `file:line: what`."""
    found: list[str] = []
    for script in sorted((root / "bench").glob("*.py")):
        nodes = sorted(
            (
                n
                for n in ast.walk(ast.parse(script.read_text(), str(script)))
                if isinstance(n, ast.Import | ast.ImportFrom)
            ),
            key=lambda n: (n.lineno, n.col_offset),
        )
        for node in nodes:
            where = f"{script.name}:{node.lineno}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    if top == "gateway" and _kind(root, alias.name) not in ("package", "root"):
                        found.append(f"{where}: import {alias.name}")
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "gateway":
                module = node.module or ""
                kind = _kind(root, module)
                if kind not in ("package", "root"):
                    found.append(f"{where}: from {module} import ... ({kind} module)")
                    continue
                if kind == "root" and module != "gateway":
                    continue  # a root module is its own face
                exported = _all_of(root.joinpath(*module.split("."), "__init__.py"))
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    if alias.name in exported or _kind(root, sub) in ("package", "root"):
                        continue
                    found.append(f"{where}: from {module} import {alias.name} (not in {module}.__all__)")
    return found


def test_the_bench_imports_the_gateway_through_its_package_faces_only() -> None:
    assert leaf_imports(ROOT) == [], "import it from the package's face (add it to its __all__ if it is public)"


def test_a_planted_leaf_import_fails_also_lazy_or_as_a_name_the_face_does_not_export(tmp_path: Path) -> None:
    files = {
        "gateway/__init__.py": "",
        "gateway/clock.py": "",
        "gateway/store/__init__.py": '__all__ = ["Principal"]\n',
        "gateway/store/records.py": "",
        "gateway/store/sqlite/__init__.py": '__all__ = ["SQLiteStore"]\n',
        "gateway/store/sqlite/store.py": "",
        "bench/good.py": (
            "from gateway.clock import SystemClock\nfrom gateway.store import Principal\n"
            "from gateway.store.sqlite import SQLiteStore\nimport gateway.store\nfrom gate import READ_TOOL\n"
        ),
        "bench/bad.py": (
            "from gateway.store.records import Principal\n"
            "def f():\n    from gateway.store import Secret\n"
            "import gateway.store.records\n"
            "from gateway.store import records\n"
        ),
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert leaf_imports(tmp_path) == [
        "bad.py:1: from gateway.store.records import ... (leaf module)",
        "bad.py:3: from gateway.store import Secret (not in gateway.store.__all__)",
        "bad.py:4: import gateway.store.records",
        "bad.py:5: from gateway.store import records (not in gateway.store.__all__)",
    ]
