"""SECURITY.md lists each promise with the tests that show it: every promise names a test, and
every test it names exists (a renamed or deleted test would leave a promise that nothing shows)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_PATH = re.compile(r"tests/[A-Za-z0-9_/]+\.py(?:::[A-Za-z0-9_]+)?")
_TEST_NAME = re.compile(r"`(test_[A-Za-z0-9_]+)`")


def promises(text: str) -> list[str]:
    """Each bullet under a "Warrant promises:" line, joined across its wrapped lines."""
    found: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("Warrant promises"):
            inside = True
        elif line.startswith(("Not promised", "#")):
            inside = False
        elif inside and line.startswith("- "):
            found.append(line)
        elif inside and found and line.startswith("  "):
            found[-1] += " " + line.strip()
    return found


def defined(path: Path, name: str) -> bool:
    return re.search(rf"^(?:async )?def {re.escape(name)}\b", path.read_text(), re.M) is not None


def test_every_promise_names_at_least_one_test() -> None:
    bullets = promises((ROOT / "SECURITY.md").read_text())
    assert len(bullets) >= 20
    assert [b for b in bullets if not _PATH.search(b)] == []


def test_every_test_security_md_names_exists() -> None:
    text = (ROOT / "SECURITY.md").read_text()
    missing = []
    for ref in _PATH.findall(text):
        file, _, name = ref.partition("::")
        if not (ROOT / file).is_file() or (name and not defined(ROOT / file, name)):
            missing.append(ref)
    # A test named alone in a promise exists in one of the files that promise names.
    for bullet in promises(text):
        files = [ROOT / ref.partition("::")[0] for ref in _PATH.findall(bullet)]
        for name in _TEST_NAME.findall(bullet):
            if not any(f.is_file() and defined(f, name) for f in files):
                missing.append(name)
    assert missing == []


def test_the_check_finds_a_missing_test() -> None:
    bullets = promises("Warrant promises:\n- a promise with no test\n  wrapped.\n- shown: `tests/unit/nope.py`\n")
    assert bullets == ["- a promise with no test wrapped.", "- shown: `tests/unit/nope.py`"]
    assert not (ROOT / "tests/unit/nope.py").exists()
    assert not defined(Path(__file__), "test_that_does_not_exist")
