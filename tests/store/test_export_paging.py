"""An evidence export never holds a run's action rows in one list: the snapshot's read spools them a
page at a time and the bundle reads them back a page at a time, and the bundle is byte for byte
the one the single-list export made for the same data. Both stores."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.api import bundle_lines, export
from gateway.store import action_spool
from gateway.store.action_spool import ActionSpool
from gateway.store.bundle import action_line, blob_line, end_line, entry_refs, event_line, header_line, verify_bundle
from gateway.store.records import ActionRecord
from gateway.store.sql.rows import action_from_row
from tests.harness import LEDGER_KEY, TENANT, World, code_of

pytestmark = pytest.mark.anyio


async def _busy_run(world: World) -> str:
    """Eleven action rows: reads, writes, refusals, an approved write."""
    run = await world.new_run()
    for i in range(4):
        assert code_of(await world.call(run.token, "t__read", {"q": f"r{i}"})) is None
        assert code_of(await world.call(run.token, "t__write", {"text": f"w{i}"})) is None
    assert code_of(await world.call(run.token, "t__denied", {})) == "forbidden"
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    assert code_of(asked) == "approval_required"
    await world.decide(asked)
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) is None
    assert code_of(await world.call(run.token, "t__nope", {})) is not None
    return run.run_id


async def _as_before(world: World, run_id: str, now: float) -> str:
    """The bundle as the export wrote it before paging: every action row in one list, one read."""
    snapshot = await world.store.export_snapshot(TENANT, run_id)
    snapshot.actions.close()  # only its run and head: the rows come from one list, as before

    def every_row(conn: Any) -> list[ActionRecord]:
        rows = conn.execute("SELECT * FROM actions WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        return [action_from_row(r) for r in rows]

    actions = await world.store._aside(every_row)  # type: ignore[attr-defined]
    out = [header_line(snapshot.run, snapshot.head, now)]
    assert snapshot.head is not None
    entries = await world.store.ledger_entries(run_id, after=0, upto=snapshot.head.seq, limit=10_000)
    refs: dict[str, None] = {}
    for row in entries:
        refs.update(dict.fromkeys(entry_refs(row)))
    out += [event_line(row) for row in entries]
    out += [action_line(a) for a in actions]
    texts = await world.store.blob_texts(list(refs))
    out += [blob_line(sha, texts.get(sha)) for sha in refs]
    out.append(end_line(len(entries), len(actions), len(refs)))
    return "".join(out)


async def _exported(world: World, run_id: str, now: float) -> str:
    snapshot = await world.store.export_snapshot(TENANT, run_id)
    return "".join([chunk async for chunk in bundle_lines(world.store, snapshot, now)])


async def test_the_paged_export_is_byte_identical_to_the_single_list_one(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = await _busy_run(world)
    now = world.clock.now()
    before = await _as_before(world, run_id, now)
    for page in (1000, 3, 1):  # one page, several with a remainder, one row each
        monkeypatch.setattr(action_spool, "ACTIONS_PER_PAGE", page)
        monkeypatch.setattr(export, "ENTRIES_PER_PAGE", page)
        text = await _exported(world, run_id, now)
        assert text == before, page
    report = verify_bundle(before.splitlines(), LEDGER_KEY)
    assert report.ok and report.actions == 11, report.first_bad


async def test_the_export_fetches_and_holds_action_rows_a_bounded_page_at_a_time(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = await _busy_run(world)
    monkeypatch.setattr(action_spool, "ACTIONS_PER_PAGE", 3)
    monkeypatch.setattr(export, "ENTRIES_PER_PAGE", 4)
    fetched: list[int] = []
    held: list[int] = []
    write_page, pages = ActionSpool.write_page, ActionSpool.pages

    def counting_write(self: ActionSpool, actions: Any) -> None:
        fetched.append(len(actions))
        write_page(self, actions)

    def counting_pages(self: ActionSpool, size: int | None = None) -> Iterator[list[ActionRecord]]:
        for page in pages(self, size):
            held.append(len(page))
            yield page

    monkeypatch.setattr(ActionSpool, "write_page", counting_write)
    monkeypatch.setattr(ActionSpool, "pages", counting_pages)
    text = await _exported(world, run_id, world.clock.now())
    assert fetched == [3, 3, 3, 2]  # the snapshot's read: pages of the store's size, never one list
    assert held == [4, 4, 3]  # the bundle: pages of the export's size read back from the spool
    assert sum(1 for line in text.splitlines() if line.startswith('{"kind":"action"')) == 11


async def test_an_abandoned_export_closes_its_spool(world: World) -> None:
    run_id = await _busy_run(world)
    snapshot = await world.store.export_snapshot(TENANT, run_id)
    lines = bundle_lines(world.store, snapshot, world.clock.now())
    assert (await anext(lines)).startswith('{"kind":"bundle"')
    await lines.aclose()  # the client went away after the header
    assert snapshot.actions._file.closed
