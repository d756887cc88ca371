"""docs/events.md names every run event type the gateway writes with a literal type: a new
`self._event(conn, run_id, "type", ...)` without its row in the catalogue fails here. (Types built
by f-string, `run_{status}`, `approval_{status}`, `milestone_{status}`, are named there by hand.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WRITE = re.compile(r'\._event\(\s*\w+,\s*[^,()]+,\s*"([a-z][a-z0-9_]*)"')


def written_types() -> dict[str, str]:
    """type -> the first file that writes it."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "gateway").rglob("*.py")):
        for match in WRITE.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match.group(1), str(path.relative_to(ROOT)))
    return found


def catalogued_types() -> set[str]:
    """The types named in the first column of the catalogue's rows."""
    names: set[str] = set()
    for line in (ROOT / "docs" / "events.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([a-z][a-z0-9_]*)`", line.split("|")[1]))
    return names


def test_every_event_type_written_is_in_the_catalogue() -> None:
    written = written_types()
    assert {"run_created", "lease_granted", "oauth_consented", "oauth_revoked"} <= set(written)  # the scan sees them
    missing = {t: where for t, where in written.items() if t not in catalogued_types()}
    assert not missing, f"event types written but not in docs/events.md: {missing}"
