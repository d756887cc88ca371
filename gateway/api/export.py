"""`GET /api/runs/{run_id}/export`: the run's evidence bundle (gateway/store/bundle.py), streamed.

The run, its MAC'd head and its action rows come from one consistent read, which spools the rows
to disk a page at a time (gateway/store/action_spool.py: memory stays at a page however many the
run has); the entries up to that head follow page by page (entries never change once written),
then the action rows read back from the spool page by page, then every body they name.
A run that is not the key's tenant's is 404 before anything is streamed. A store failure
mid-stream aborts the response, so the bundle lacks its `end` line and fails verification.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from gateway.service import Gateway
from gateway.store.bundle import (
    MEDIA_TYPE,
    action_line,
    blob_line,
    end_line,
    entry_refs,
    event_line,
    header_line,
)
from gateway.store.ports import LedgerStore
from gateway.store.records import Principal
from gateway.store.reports import RunExport

ENTRIES_PER_PAGE = 1000
BLOBS_PER_PAGE = 50  # bodies may be large (up to the request limit each)
_NO_HEAD = 2**62  # a run without a MAC'd head: export every entry; verification names the problem


async def export_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """Raises: NotFound (also for another tenant's run)."""
    run_id = request.path_params["run_id"]
    snapshot = await gateway.store.export_snapshot(principal.tenant, run_id)
    headers = {"Content-Disposition": f'attachment; filename="{run_id}.bundle.jsonl"'}
    lines = bundle_lines(gateway.store, snapshot, gateway.clock.now())
    return StreamingResponse(lines, media_type=MEDIA_TYPE, headers=headers)


async def bundle_lines(store: LedgerStore, snapshot: RunExport, now: float) -> AsyncIterator[str]:
    """The bundle, a page of lines at a time. Closes the snapshot's spool of action rows, also
    when the stream is abandoned."""
    try:
        async for chunk in _lines(store, snapshot, now):
            yield chunk
    finally:
        snapshot.actions.close()


async def _lines(store: LedgerStore, snapshot: RunExport, now: float) -> AsyncIterator[str]:
    run_id = snapshot.run.run_id
    yield header_line(snapshot.run, snapshot.head, now)
    upto = snapshot.head.seq if snapshot.head is not None else _NO_HEAD
    refs: dict[str, None] = {}
    events, after = 0, 0
    while True:
        page = await store.ledger_entries(run_id, after=after, upto=upto, limit=ENTRIES_PER_PAGE)
        for row in page:
            refs.update(dict.fromkeys(entry_refs(row)))
        events += len(page)
        yield "".join(event_line(row) for row in page)
        if len(page) < ENTRIES_PER_PAGE:
            break
        after = page[-1].seq
    for actions in snapshot.actions.pages(ENTRIES_PER_PAGE):  # read back from the spool, a page in memory
        yield "".join(action_line(a) for a in actions)
    hashes = list(refs)
    for i in range(0, len(hashes), BLOBS_PER_PAGE):
        chunk = hashes[i : i + BLOBS_PER_PAGE]
        texts = await store.blob_texts(chunk)
        yield "".join(blob_line(sha, texts.get(sha)) for sha in chunk)
    yield end_line(events, len(snapshot.actions), len(hashes))
