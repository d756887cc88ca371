"""A run's action rows read in one snapshot, kept on disk, handed out a page at a time.

An evidence bundle needs every action row as of the MAC'd head it names, so the rows are read in
the same read transaction as the head; but a run may hold millions of them, and the bundle is
streamed to a client that may be slow. Holding the snapshot open for as long as the client takes
would hold a long-read slot (and, on SQLite, the WAL) hostage to it; reading the rows into one
list would hold them all in memory. So the read writes them here, `ACTIONS_PER_PAGE` rows at a
time, into an unnamed temporary file, and ends; the export then reads them back page by page.
Memory stays at a page whatever the run's size; the file goes when the spool is closed (or
collected).

Each row is one line of JSON of the record's fields: every value of an ActionRecord is JSON
(`receipt` was parsed from JSON), and JSON round-trips Python's floats exactly, so the records
read back equal those written.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import IO, Any

from gateway.domain.lifecycle import ActionStatus
from gateway.store.records import ActionRecord

ACTIONS_PER_PAGE = 1000


class ActionSpool:
    """Action rows in the order they were written; iterable (once per `pages()` call), sized."""

    def __init__(self) -> None:
        self._file: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")
        self._count = 0

    def write_page(self, actions: Sequence[ActionRecord]) -> None:
        """Add a page of rows (on the thread of the read that fetched them)."""
        self._file.writelines(json.dumps(_fields(a), separators=(",", ":")) + "\n" for a in actions)
        self._count += len(actions)

    def __len__(self) -> int:
        return self._count

    def pages(self, size: int | None = None) -> Iterator[list[ActionRecord]]:
        """The rows, at most `size` (default ACTIONS_PER_PAGE) at a time."""
        size = size or ACTIONS_PER_PAGE
        self._file.flush()
        self._file.seek(0)
        page: list[ActionRecord] = []
        for line in self._file:
            page.append(_record(json.loads(line)))
            if len(page) >= size:
                yield page
                page = []
        if page:
            yield page

    def __iter__(self) -> Iterator[ActionRecord]:
        for page in self.pages():
            yield from page

    def close(self) -> None:
        self._file.close()


def _fields(action: ActionRecord) -> dict[str, Any]:
    return {**asdict(action), "status": action.status.value}


def _record(fields: dict[str, Any]) -> ActionRecord:
    return ActionRecord(**{**fields, "status": ActionStatus(fields["status"])})
