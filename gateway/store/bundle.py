"""Evidence bundles: one run's ledger as a file that anyone holding the ledger key can check offline.

A bundle is JSON Lines (UTF-8, one object per line, each naming its `kind`), in this order:

    {"kind": "bundle", "format": "warrant-evidence", "version": 1, "exported_at", "run": {...}, "head": {...}}
    {"kind": "event", "seq", "type", "body", "prev_hash", "hash"}     every entry, seq 1 .. head.seq
    {"kind": "action", ...}                                         every action row of the run
    {"kind": "blob", "sha256", "body"}  or  {"kind": "blob", "sha256", "purged": true}
    {"kind": "end", "events", "actions", "blobs"}

An event's `body` is the exact RFC 8785 entry its hash covers, a blob's `body` the exact canonical
JSON its sha256 names: nothing is re-encoded, so nothing has to be canonicalized again to verify.
Lines stream: an export never holds a whole run, and a cut-off download lacks its `end` line.

`verify_bundle` is pure (lines in, a report out; no store, no server) and names the first bad
item. It checks, in this order: the bundle's shape; every entry's hash, link and position and the
head's MAC (`gateway.store.chain.verify_run`, the store's own verification); the run header
against the entries that describe the run; every action row against the entries that describe
that action; every blob's sha256. A purged body is listed as purged: the chain still verifies.
Only the head's MAC needs the key; whoever edits entries and recomputes the chain cannot forge it.

Entries of version 2 (`gateway.store.chain.ENTRY_VERSION`) state more, and are held to it: an
action's `reason`, `created_at` and `settled_at` are what its entries say (the times are the
entries' own `at`; a read's one entry names when it was admitted), and a body a version-2 entry
names (not a read's payload, which is stored best-effort) may be listed as purged only when a
`bodies_purged` entry after it names that body. Version-1 entries are checked as they always were.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from gateway.canonical import sha256_hex
from gateway.clock import isoformat
from gateway.domain.lifecycle import RunStatus
from gateway.domain.operations import idempotency_key
from gateway.domain.units import format_money
from gateway.store.chain import EntryRow, Head, entry_version, verify_run
from gateway.store.records import ActionRecord, RunRecord

FORMAT = "warrant-evidence"
VERSION = 1
MEDIA_TYPE = "application/x-ndjson"

# Where each entry type names a stored body. Rejected calls' payloads are never stored.
_PAYLOAD_TYPES = frozenset({"action_admitted", "action_settled", "approval_requested"})
_STATUS_EVENTS = {f"run_{s.value}": s.value for s in RunStatus}
# Action row fields each entry type states (the settled entry of a read also states its intent).
_ADMITTED_FIELDS = (
    *("tool", "effect", "operation_id", "payload_sha256", "epoch", "worker", "approval_id", "repeat_of"),
    *("reserved", "process_id", "task_id"),  # task_id: absent (null) unless the call named its task
)
_REJECTED_FIELDS = ("tool", "payload_sha256", "code", "epoch", "worker", "task_id")  # a refusal names none
_SETTLED_FIELDS = (
    *("status", "code", "receipt", "result_sha256", "actual_spend"),
    *("tool", "effect", "payload_sha256", "epoch", "worker", "process_id"),  # a read's one entry
)


# -- writing ---------------------------------------------------------------------------------
def _line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def header_line(run: RunRecord, head: Head | None, exported_at: float) -> str:
    contract = run.contract_json
    return _line(
        {
            "kind": "bundle",
            "format": FORMAT,
            "version": VERSION,
            "exported_at": isoformat(exported_at),
            "run": {
                "run_id": run.run_id,
                "tenant": run.tenant,
                "lineage_id": run.lineage_id,
                "parent_run_id": run.parent_run_id,
                "status": run.status.value,
                "spec_version": run.spec_version,
                "currency": run.currency,
                "contract": contract,
                "contract_sha256": sha256_hex(contract.encode("utf-8")),
            },
            "head": {"seq": head.seq, "hash": head.hash, "mac": head.mac} if head is not None else None,
        }
    )


def event_line(row: EntryRow) -> str:
    return _line(
        {
            "kind": "event",
            "seq": row.seq,
            "type": row.type,
            "body": row.body,
            "prev_hash": row.prev_hash,
            "hash": row.hash,
        }
    )


def action_line(action: ActionRecord) -> str:
    return _line({"kind": "action", **asdict(action), "status": action.status.value})


def blob_line(sha256: str, body: str | None) -> str:
    if body is None:
        return _line({"kind": "blob", "sha256": sha256, "purged": True})
    return _line({"kind": "blob", "sha256": sha256, "body": body})


def end_line(events: int, actions: int, blobs: int) -> str:
    return _line({"kind": "end", "events": events, "actions": actions, "blobs": blobs})


def line_kind(line: str) -> str | None:
    """The kind of a bundle line as written here (`kind` first), without parsing the rest."""
    prefix = '{"kind":"'
    if not line.startswith(prefix):
        return None
    end = line.find('"', len(prefix))
    return line[len(prefix) : end] if end > 0 else None


def blob_refs(type_: str, data: Mapping[str, Any]) -> list[str]:
    """The stored bodies an entry names: contracts, payloads (not of rejected calls), results."""
    refs = []
    if isinstance(data.get("contract_sha256"), str):
        refs.append(data["contract_sha256"])
    if type_ in _PAYLOAD_TYPES and isinstance(data.get("payload_sha256"), str):
        refs.append(data["payload_sha256"])
    if type_ == "action_settled" and isinstance(data.get("result_sha256"), str):
        refs.append(data["result_sha256"])
    return refs


def entry_refs(row: EntryRow) -> list[str]:
    """`blob_refs` of a stored entry (its body is the canonical entry)."""
    body = json.loads(row.body)
    return blob_refs(row.type, body.get("data") or {})


# -- verifying -------------------------------------------------------------------------------
@dataclass(frozen=True)
class BadItem:
    """The first thing wrong with a bundle. `problem` is prose; `code` is stable
    (docs/decisions/0013-evidence-metrics-traces.md)."""

    code: str
    item: str  # bundle | event | head | run | action | blob
    ref: str | int | None  # the entry's seq, the action id, the blob's sha256, the run id
    problem: str
    field: str | None = None
    line: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BundleReport:
    ok: bool
    run_id: str | None
    head_seq: int | None
    events: int
    actions: int
    blobs: int
    purged: int
    first_bad: BadItem | None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["first_bad"] = self.first_bad.as_dict() if self.first_bad else None
        return out


class _Bad(Exception):
    def __init__(self, bad: BadItem) -> None:
        super().__init__(bad.problem)
        self.bad = bad


class _Lines:
    """The bundle's objects one at a time, with one object of lookahead."""

    def __init__(self, lines: Iterable[str | bytes]) -> None:
        self._lines = iter(lines)
        self.number = 0
        self._next: dict[str, Any] | None = None
        self._done = False

    def peek(self) -> dict[str, Any] | None:
        if self._next is None and not self._done:
            self._next = self._read()
            self._done = self._next is None
        return self._next

    def take(self) -> dict[str, Any] | None:
        obj = self.peek()
        self._next = None
        return obj

    def kind(self) -> str | None:
        obj = self.peek()
        return None if obj is None else obj.get("kind")

    def _read(self) -> dict[str, Any] | None:
        for raw in self._lines:
            self.number += 1
            text = raw.decode("utf-8", errors="strict") if isinstance(raw, bytes) else raw
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except ValueError:
                raise _Bad(
                    BadItem("bundle_malformed", "bundle", None, "a line is not JSON", line=self.number)
                ) from None
            if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
                raise _Bad(BadItem("bundle_malformed", "bundle", None, "a line names no kind", line=self.number))
            return obj
        return None


def _field(obj: Mapping[str, Any], name: str, kind: type | tuple[type, ...], item: str, line: int) -> Any:
    value = obj.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _Bad(BadItem("bundle_malformed", item, None, f"{item} has no valid {name!r}", field=name, line=line))
    return value


@dataclass
class _Tally:
    run_id: str | None = None
    head_seq: int | None = None
    events: int = 0
    actions: int = 0
    blobs: int = 0
    purged: int = 0

    def report(self, bad: BadItem | None) -> BundleReport:
        return BundleReport(
            bad is None, self.run_id, self.head_seq, self.events, self.actions, self.blobs, self.purged, bad
        )


class _Ledger:
    """What the entries say about the run, its actions and its bodies, gathered as they stream past."""

    def __init__(self) -> None:
        self.first_type: str | None = None
        self.created: Mapping[str, Any] = {}
        self.status: str | None = None
        self.contract_sha256: str | None = None
        self.actions: dict[str, dict[str, Any]] = {}  # action id -> the row's fields as the entries state them
        self.refs: dict[str, None] = {}  # referenced bodies, in order
        # Bodies a version-2 entry needs stored -> that entry's seq, and the last purge entry naming each.
        self.kept: dict[str, int] = {}
        self.purged: dict[str, int] = {}

    def observe(
        self, type_: str, data: Mapping[str, Any], seq: int = 0, version: int = 1, at: str | None = None
    ) -> None:
        if self.first_type is None:
            self.first_type = type_
            if type_ == "run_created":
                self.created, self.status = data, "running"
        self.status = _STATUS_EVENTS.get(type_, self.status)
        if isinstance(data.get("contract_sha256"), str):
            self.contract_sha256 = data["contract_sha256"]
        for ref in blob_refs(type_, data):
            self.refs.setdefault(ref, None)
        if version >= 2:
            for ref in kept_refs(type_, data):
                self.kept[ref] = seq
        if type_ == "bodies_purged":
            self.purged.update((b, seq) for b in data.get("bodies") or () if isinstance(b, str))
        action_id = data.get("action_id")
        if not isinstance(action_id, str):
            return
        if type_ == "action_compensated":  # its compensating call succeeded (docs/compensation.md)
            self.actions.setdefault(action_id, {})["status"] = "compensated"
            return
        if type_ not in ("action_admitted", "action_rejected", "action_settled"):
            return
        stated = self.actions.setdefault(action_id, {})
        if type_ == "action_admitted":
            stated.update({f: data.get(f) for f in _ADMITTED_FIELDS})
            stated.update(status="admitted", code=None, receipt=None, result_sha256=None)
            if version >= 2:  # the row's reason and times, as the entry's own `at` gives them
                stated.update(reason=None, created_at=at, settled_at=None)
        elif type_ == "action_rejected":
            stated.update({f: data.get(f) for f in _REJECTED_FIELDS})
            stated.update(status="rejected", receipt=None, result_sha256=None)
            if version >= 2:
                stated.update(reason=data.get("reason"), created_at=at, settled_at=at)
        else:
            stated.update({f: data.get(f) for f in _SETTLED_FIELDS if f in data})
            stated.setdefault("receipt", None)
            stated.setdefault("result_sha256", None)
            if version >= 2:
                stated.update(reason=data.get("reason"), settled_at=at)
                if "admitted_at" in data:  # a read's one entry
                    stated["created_at"] = data["admitted_at"]
                    stated["task_id"] = data.get("task_id")


def kept_refs(type_: str, data: Mapping[str, Any]) -> list[str]:
    """The bodies a version-2 entry needs stored until a later purge entry names them: `blob_refs`
    but a read's payload (stored best-effort: a replica may take it for stored when it was purged)."""
    refs = blob_refs(type_, data)
    if type_ == "action_settled" and data.get("effect") != "write" and isinstance(data.get("payload_sha256"), str):
        refs = [r for r in refs if r != data["payload_sha256"] or r == data.get("result_sha256")]
    return refs


def verify_bundle(lines: Iterable[str | bytes], key: bytes) -> BundleReport:
    """Check an evidence bundle, line by line, with the ledger key. Pure: no I/O of its own.

    Returns a report whose `first_bad` names the first bad item (never raises for a bad bundle).
    """
    tally = _Tally()
    try:
        _verify(_Lines(lines), key, tally)
    except _Bad as bad:
        return tally.report(bad.bad)
    except UnicodeDecodeError:
        return tally.report(BadItem("bundle_malformed", "bundle", None, "the bundle is not UTF-8"))
    return tally.report(None)


def _verify(lines: _Lines, key: bytes, tally: _Tally) -> None:
    header = lines.take()
    if header is None or header.get("kind") != "bundle" or header.get("format") != FORMAT:
        raise _Bad(BadItem("bundle_malformed", "bundle", None, "the first line is not a Warrant evidence bundle"))
    if header.get("version") != VERSION:
        raise _Bad(BadItem("bundle_version", "bundle", None, f"bundle version {header.get('version')!r}"))
    run = _field(header, "run", dict, "bundle", lines.number)
    run_id = _field(run, "run_id", str, "run", lines.number)
    for name in ("tenant", "lineage_id", "currency"):
        _field(run, name, str, "run", lines.number)
    tally.run_id = run_id
    head = _head(header.get("head"), run_id, lines.number)
    tally.head_seq = head.seq if head is not None else None
    ledger = _Ledger()

    def entries() -> Iterator[EntryRow]:
        while lines.kind() == "event":
            obj = lines.take()
            assert obj is not None
            row = EntryRow(
                run_id,
                _field(obj, "seq", int, "event", lines.number),
                _field(obj, "type", str, "event", lines.number),
                _field(obj, "body", str, "event", lines.number),
                _field(obj, "prev_hash", str, "event", lines.number),
                _field(obj, "hash", str, "event", lines.number),
            )
            try:  # a body that is not an entry is verify_run's to name
                body = json.loads(row.body)
                data = body.get("data") if isinstance(body, dict) else None
            except ValueError:
                body, data = None, None
            version, at = (entry_version(body), body.get("at")) if isinstance(data, dict) else (1, None)
            ledger.observe(row.type, data if isinstance(data, dict) else {}, row.seq, version, at)
            tally.events += 1
            yield row

    _, bad = verify_run(run_id, entries(), head, key)
    if bad is not None:
        item = "head" if bad.code.startswith("head_") else "event"
        raise _Bad(BadItem(bad.code, item, bad.seq, bad.problem))
    _check_run(run, ledger)
    _check_actions(lines, run, ledger, tally)
    _check_blobs(lines, ledger, tally)
    end = lines.take()
    if end is None:
        raise _Bad(BadItem("bundle_incomplete", "bundle", None, "the bundle has no end line: it was cut off"))
    if end.get("kind") != "end":
        problem = f"a {end.get('kind')} line is out of place"
        raise _Bad(BadItem("bundle_malformed", "bundle", None, problem, line=lines.number))
    counts = (end.get("events"), end.get("actions"), end.get("blobs"))
    if counts != (tally.events, tally.actions, tally.blobs):
        problem = "the end line counts other items than the bundle holds"
        raise _Bad(BadItem("bundle_incomplete", "bundle", None, problem, line=lines.number))
    if lines.take() is not None:
        raise _Bad(BadItem("bundle_malformed", "bundle", None, "lines after the end line", line=lines.number))


def _head(raw: Any, run_id: str, line: int) -> Head | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _Bad(BadItem("bundle_malformed", "head", None, "the head is not an object", line=line))
    return Head(
        run_id,
        _field(raw, "seq", int, "head", line),
        _field(raw, "hash", str, "head", line),
        _field(raw, "mac", str, "head", line),
    )


def _check_run(run: Mapping[str, Any], ledger: _Ledger) -> None:
    """The run header is not MAC'd: every field of it must be what the verified entries say."""
    run_id = run["run_id"]

    def bad(field: str, problem: str) -> _Bad:
        return _Bad(BadItem("run_mismatch", "run", run_id, problem, field=field))

    if ledger.first_type != "run_created":
        raise bad("run_id", "the chain does not begin with run_created")
    for field in ("tenant", "lineage_id"):
        if run.get(field) != ledger.created.get(field):
            raise bad(field, f"the header's {field} is not the one run_created records")
    if run.get("status") != ledger.status:
        raise bad("status", "the header's status is not the one the entries leave the run in")
    contract = run.get("contract")
    if not isinstance(contract, str) or sha256_hex(contract.encode("utf-8")) != run.get("contract_sha256"):
        raise bad("contract", "the header's contract does not hash to its contract_sha256")
    if run.get("contract_sha256") != ledger.contract_sha256:
        raise bad("contract_sha256", "the header's contract is not the one the entries name last")


def _listed(lines: _Lines, kind: str, key: str, seen: set[str]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Each line of `kind` in turn, with where it stands (for `BadItem`); its `key` names it once."""
    while lines.kind() == kind:
        obj = lines.take()
        assert obj is not None
        where = {"item": kind, "ref": _field(obj, key, str, kind, lines.number), "line": lines.number}
        if where["ref"] in seen:
            raise _Bad(BadItem(f"{kind}_duplicate", problem=f"the {kind} is listed twice", **where))
        seen.add(where["ref"])
        yield obj, where


def _check_actions(lines: _Lines, run: Mapping[str, Any], ledger: _Ledger, tally: _Tally) -> None:
    seen: set[str] = set()
    for row, where in _listed(lines, "action", "action_id", seen):
        tally.actions += 1
        stated = ledger.actions.get(where["ref"])
        if stated is None:
            if row.get("status") == "admitted" and row.get("effect") == "read":
                stated = {}  # a read in flight: its one entry is written when it settles
            else:
                problem = "no entry of the chain describes this action"
                raise _Bad(BadItem("action_unrecorded", problem=problem, **where))
        operation_id = stated.get("operation_id")
        stated = {
            "run_id": run["run_id"],
            "tenant": run["tenant"],
            "lineage_id": run["lineage_id"],
            "idempotency_key": idempotency_key(run["tenant"], run["lineage_id"], operation_id)
            if operation_id
            else None,
            **stated,
        }
        row = _as_entries_state(row, run["currency"])
        for field, value in stated.items():
            if row.get(field) != value:
                problem = f"the row's {field} is not what the chain records"
                raise _Bad(BadItem("action_mismatch", problem=problem, field=field, **where))
    missing = next((a for a in ledger.actions if a not in seen), None)
    if missing is not None:
        problem = "the chain records an action the bundle does not list"
        raise _Bad(BadItem("action_missing", "action", missing, problem))


def _as_entries_state(row: dict[str, Any], currency: str) -> dict[str, Any]:
    """The row's money as the entries write it: decimal strings in the run's currency."""

    def money(minor: Any) -> Any:
        return format_money(minor, currency) if isinstance(minor, int) and not isinstance(minor, bool) else minor

    def when(at: Any) -> Any:
        return isoformat(at) if isinstance(at, int | float) and not isinstance(at, bool) else at

    reserved = row.get("reserved")
    if isinstance(reserved, dict):
        reserved = {dim: money(v) if dim == "spend" else v for dim, v in reserved.items()}
    times = {"created_at": when(row.get("created_at")), "settled_at": when(row.get("settled_at"))}
    return {**row, "actual_spend": money(row.get("actual_spend")), "reserved": reserved, **times}


def _check_blobs(lines: _Lines, ledger: _Ledger, tally: _Tally) -> None:
    seen: set[str] = set()
    for obj, where in _listed(lines, "blob", "sha256", seen):
        tally.blobs += 1
        if where["ref"] not in ledger.refs:
            raise _Bad(BadItem("blob_unreferenced", problem="no entry of the chain names this body", **where))
        if obj.get("purged") is True and "body" not in obj:
            needed = ledger.kept.get(where["ref"])
            if needed is not None and ledger.purged.get(where["ref"], -1) < needed:
                problem = "the body is listed as purged and no purge entry after the entry naming it names it"
                raise _Bad(BadItem("blob_purge_unrecorded", problem=problem, **where))
            tally.purged += 1
            continue
        body = obj.get("body")
        if not isinstance(body, str) or sha256_hex(body.encode("utf-8")) != where["ref"]:
            raise _Bad(BadItem("blob_edited", problem="the body does not hash to its sha256", **where))
    missing = next((s for s in ledger.refs if s not in seen), None)
    if missing is not None:
        problem = "an entry names a body the bundle neither holds nor lists as purged"
        raise _Bad(BadItem("blob_missing", "blob", missing, problem))
