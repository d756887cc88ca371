"""Every test contract comes from tests/contracts.py: no other file under tests/ spells one out.

A contract literal is a dict display with the keys "goal", "budgets" and "authority" and no `**`
spread (`{**CONTRACT, "goal": ...}` changes a factory's contract, it does not write a new one). A
literal the line above marks `# contract literal: <why>` is allowed: a test of contract parsing
that has to spell its input out, or a script that runs with code older than the factory.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FACTORY = TESTS / "contracts.py"
MARKER = "# contract literal:"
KEYS = {"goal", "budgets", "authority"}


def contract_literals(source: str) -> list[int]:
    """The lines of the unmarked contract literals in `source`."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Dict) or any(key is None for key in node.keys):
            continue
        keys = {key.value for key in node.keys if isinstance(key, ast.Constant)}
        marked = node.lineno >= 2 and MARKER in lines[node.lineno - 2]
        if KEYS <= keys and not marked:
            found.append(node.lineno)
    return found


def test_no_file_but_the_factory_writes_a_contract_literal() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        # Installed third-party files (the interop tests' Node packages ship Python) are not ours.
        if path != FACTORY and "node_modules" not in path.parts
        for line in contract_literals(path.read_text(encoding="utf-8"))
    ]
    assert found == [], f"build these with tests/contracts.py (or mark them '{MARKER} why'): {found}"


def test_the_check_finds_a_literal_and_lets_a_marked_one_and_a_changed_one_pass() -> None:
    source = (
        "A = {'goal': 'g', 'budgets': {}, 'authority': {}}\n"
        f"{MARKER} a parsing test\n"
        "B = {'goal': 'g', 'budgets': {}, 'authority': {}}\n"
        "C = {**A, 'goal': 'h', 'budgets': {}, 'authority': {}}\n"
        "D = f(x={'goal': 'g', 'budgets': {}, 'authority': {}, 'owner': 'o'})\n"
    )
    assert contract_literals(source) == [1, 5]
