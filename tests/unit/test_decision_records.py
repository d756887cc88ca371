"""The decision records in docs/decisions/: their names, their fields, their numbering, the index
that lists them, and that nothing points at the single page they were split from.

Each check is a function of a folder that returns the problems it finds, so the tests below run
it on the repository and on broken copies (a check that cannot fail checks nothing).
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "docs" / "decisions"

NAME = re.compile(r"(\d{4})-[a-z0-9]+(?:-[a-z0-9]+)*\.md")
FIELD = re.compile(r"([A-Z][a-z]*): (\S.*)")
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
STATUS = re.compile(r"proposed|accepted|superseded by (\d{4})")
SUPERSEDES = re.compile(r"\d{4}(?:, \d{4})*")
INDEX_ROW = re.compile(r"\| \[(\d{4})\]\(([^)]+)\) \| (.+?) \| (.*?) \| (.*?) \|")

# The page the records were split from, spelled in pieces so that this file names it nowhere.
OLD_NAME = "decisions" + ".md"
OLD_PAGE = re.compile(r"(?<![\w-])" + re.escape(OLD_NAME))
# Where a mention of the old page stays, each for a reason; the exact line must still hold it.
OLD_PAGE_KEPT = {
    # An OpenAPI description (GET /api/openapi.json): a public surface, changed only on purpose,
    # and its copy that tests/surfaces compares the served document with.
    ("gateway/api/schemas.py", """code: str = Field(description="stable: DESIGN.md's list and docs/decisions"""),
    ("tests/surfaces/openapi.json", """"description": "stable: DESIGN.md's list and docs/decisions"""),
    # The page's history before the split is found under its old name.
    ("docs/decisions/README.md", "history of the page before the split is `git log -- docs/decisions"),
}
SKIPPED_DIRS = {".git", ".venv", ".venv-interop", "node_modules", "__pycache__", ".pytest_cache", ".mypy_cache"}
SKIPPED_DIRS |= {".ruff_cache", ".warrant", "build"}
TEXT_SUFFIXES = {".md", ".py", ".yaml", ".yml", ".sql", ".toml", ".txt", ".html", ".json", ".js", ".mjs", ".cfg"}


def read_record(path: Path) -> tuple[str | None, dict[str, list[str]]]:
    """A record's title and its fields: the lines `Name: value` after the title, up to a blank line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or not lines[0].startswith("# ") or not lines[0][2:].strip():
        return None, {}
    fields: dict[str, list[str]] = {}
    if len(lines) < 2 or lines[1] != "":
        return lines[0][2:].strip(), fields
    for line in lines[2:]:
        found = FIELD.fullmatch(line)
        if found is None:
            break
        fields.setdefault(found.group(1), []).append(found.group(2))
    return lines[0][2:].strip(), fields


def record_problems(folder: Path) -> list[str]:
    """What is wrong with the records of `folder` (every file but README.md) and their numbering."""
    problems: list[str] = []
    numbers: list[int] = []
    named_records: list[tuple[str, str]] = []  # (record, the number its Status or Supersedes names)
    for path in sorted(folder.iterdir()):
        if path.name == "README.md":
            continue
        named = NAME.fullmatch(path.name)
        if named is None:
            problems.append(f"{path.name}: not named NNNN-short-slug.md")
            continue
        numbers.append(int(named.group(1)))
        title, fields = read_record(path)
        if title is None:
            problems.append(f"{path.name}: does not begin with a `# title` line")
            continue
        for name in ("Date", "Status"):
            if len(fields.get(name, [])) != 1:
                problems.append(f"{path.name}: wants one `{name}:` line after its title, before a blank line")
        for day in fields.get("Date", []):
            try:
                valid = ISO_DATE.fullmatch(day) is not None and date.fromisoformat(day) is not None
            except ValueError:
                valid = False
            if not valid:
                problems.append(f"{path.name}: Date {day!r} is not an ISO date (YYYY-MM-DD)")
        for status in fields.get("Status", []):
            found = STATUS.fullmatch(status)
            if found is None:
                problems.append(f"{path.name}: Status {status!r} is not proposed, accepted or superseded by NNNN")
            elif found.group(1):
                named_records.append((path.name, found.group(1)))
        for supersedes in fields.get("Supersedes", []):
            if SUPERSEDES.fullmatch(supersedes) is None:
                problems.append(f"{path.name}: Supersedes {supersedes!r} is not NNNN (or NNNN, NNNN)")
            else:
                named_records += [(path.name, number) for number in supersedes.split(", ")]
    counts = Counter(numbers)
    problems += [f"number {n:04d} is used {c} times" for n, c in sorted(counts.items()) if c > 1]
    skipped = sorted(set(range(1, max(counts, default=0) + 1)) - set(counts))
    problems += [f"number {n:04d} is skipped: the numbers run from 0001 without gaps" for n in skipped]
    problems += [
        f"{name} names record {number}, which does not exist"
        for name, number in named_records
        if int(number) not in counts
    ]
    return problems


def index_problems(folder: Path) -> list[str]:
    """What the index (README.md of `folder`) gets wrong: each record once, by its number, title and date."""
    readme = folder / "README.md"
    if not readme.is_file():
        return ["README.md is missing"]
    rows = [
        found.groups()
        for line in readme.read_text(encoding="utf-8").splitlines()
        if (found := INDEX_ROW.fullmatch(line))
    ]
    problems: list[str] = []
    listed = Counter(target for _, target, *_ in rows)
    records = {path.name: path for path in folder.glob("*.md") if path.name != "README.md"}
    for name in sorted(records):
        if listed[name] != 1:
            problems.append(f"README.md lists {name} {listed[name]} times, not once")
    for number, target, title, day, _issue in rows:
        path = records.get(target)
        if path is None:
            problems.append(f"README.md lists {target}, which is not a record here")
            continue
        record_title, fields = read_record(path)
        if not target.startswith(number + "-"):
            problems.append(f"README.md numbers {target} {number}")
        if title != record_title:
            problems.append(f"README.md titles {target} {title!r}; the record says {record_title!r}")
        if [day] != fields.get("Date"):
            problems.append(f"README.md dates {target} {day}; the record says {fields.get('Date')}")
    return problems


def old_page_mentions(root: Path) -> list[str]:
    """Every line under `root` that still names the page the records were split from."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder, name)
            if path.suffix not in TEXT_SUFFIXES and name != "Makefile":
                continue
            relative = path.relative_to(root).as_posix()
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if OLD_PAGE.search(line) and not any(relative == p and kept in line for p, kept in OLD_PAGE_KEPT):
                    found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_every_record_is_named_and_dated_and_the_numbers_run_from_0001() -> None:
    assert len(list(RECORDS.glob("[0-9]*.md"))) >= 1
    assert record_problems(RECORDS) == []


def test_the_index_lists_every_record_once_with_its_title() -> None:
    assert index_problems(RECORDS) == []


def test_no_file_links_to_the_page_the_records_replaced() -> None:
    assert not (ROOT / "docs" / ("decisions" + ".md")).exists()
    assert old_page_mentions(ROOT) == []


def _first_record(folder: Path) -> Path:
    return sorted(folder.glob("0001-*.md"))[0]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path.name, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _misnamed(folder: Path) -> None:
    _first_record(folder).rename(folder / "0001_Codes.md")


def _untitled(folder: Path) -> None:
    path = _first_record(folder)
    _edit(path, "# ", "")


def _undated(folder: Path) -> None:
    path = _first_record(folder)
    date_line = next(line for line in path.read_text().splitlines() if line.startswith("Date: "))
    _edit(path, date_line + "\n", "")


def _badly_dated(folder: Path) -> None:
    path = _first_record(folder)
    date_line = next(line for line in path.read_text().splitlines() if line.startswith("Date: "))
    _edit(path, date_line, "Date: 29 November 2026")


def _without_status(folder: Path) -> None:
    _edit(_first_record(folder), "Status: accepted\n", "")


def _unknown_status(folder: Path) -> None:
    _edit(_first_record(folder), "Status: accepted\n", "Status: done\n")


def _superseded_by_nothing(folder: Path) -> None:
    _edit(_first_record(folder), "Status: accepted\n", "Status: superseded by 9999\n")


def _duplicate_number(folder: Path) -> None:
    second = sorted(folder.glob("0002-*.md"))[0]
    second.rename(folder / second.name.replace("0002-", "0001-", 1))


def _gap(folder: Path) -> None:
    last = sorted(folder.glob("[0-9]*.md"))[-1]
    last.rename(folder / f"{int(last.name[:4]) + 1:04d}{last.name[4:]}")


def _unlisted(folder: Path) -> None:
    name = _first_record(folder).name
    readme = folder / "README.md"
    readme.write_text("\n".join(line for line in readme.read_text().splitlines() if f"]({name})" not in line))


def _listed_twice(folder: Path) -> None:
    readme = folder / "README.md"
    row = next(line for line in readme.read_text().splitlines() if INDEX_ROW.fullmatch(line))
    _edit(readme, row, row + "\n" + row)


def _redated(folder: Path) -> None:
    path = _first_record(folder)
    date_line = next(line for line in path.read_text().splitlines() if line.startswith("Date: "))
    _edit(path, date_line, "Date: 2000-01-01")


def _retitled(folder: Path) -> None:
    path = _first_record(folder)
    title = path.read_text().splitlines()[0]
    _edit(path, title, title + " and more")


BREAKAGES = [
    (_misnamed, record_problems),
    (_untitled, record_problems),
    (_undated, record_problems),
    (_badly_dated, record_problems),
    (_without_status, record_problems),
    (_unknown_status, record_problems),
    (_superseded_by_nothing, record_problems),
    (_duplicate_number, record_problems),
    (_gap, record_problems),
    (_unlisted, index_problems),
    (_listed_twice, index_problems),
    (_retitled, index_problems),
    (_redated, index_problems),
]


@pytest.mark.parametrize(("breakage", "check"), BREAKAGES, ids=[b.__name__.strip("_") for b, _ in BREAKAGES])
def test_each_check_finds_what_it_is_for(
    breakage: Callable[[Path], None], check: Callable[[Path], list[str]], tmp_path: Path
) -> None:
    folder = tmp_path / "decisions"
    shutil.copytree(RECORDS, folder)
    assert check(folder) == []
    breakage(folder)
    assert check(folder) != []


@pytest.mark.parametrize(
    "line",
    [
        f'see docs/{OLD_NAME}, "Keys and roles"',
        f"see [the decisions]({OLD_NAME}#leases)",
        f"# (docs/{OLD_NAME})",
        f"[{OLD_NAME}](../{OLD_NAME})",
    ],
)
def test_a_mention_of_the_old_page_is_found(line: str, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(f"text\n{line}\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "skipped.md").write_text(line)
    assert old_page_mentions(tmp_path) == [f"docs/page.md:2: {line}"]
