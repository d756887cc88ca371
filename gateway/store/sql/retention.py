"""The store, retention: purging the bodies settled actions name (docs/retention.md).

A purge takes a batch of settled actions whose bodies were not purged yet, and deletes the bodies
they name (payload and result) that nothing outside the batch still needs: another action not
purged yet (in flight, `unknown`, or simply newer), a pending or approved approval, a checkpoint,
a milestone's evidence. Bodies are content-addressed and shared, so such a body is kept for that
record, and goes when the last one naming it is purged. The actions are marked, and in the same
transaction each run the purge touches gets a `bodies_purged` entry naming its marked actions and
the bodies its records name that went: every run of the batch, and every other run naming a body
that went. So every purged mark and every missing body is matched by an entry of its own chain
(verify and the evidence bundle check both require it, gateway/store/replay.py). Rows, hashes and
entries are never deleted: every chain verifies after a purge as before.

The same transaction takes the payloads of the signals of ended runs in scope (`before`: runs that
ended before it): the payload becomes JSON null and `payload_purged_at` is set; the row and its
`payload_sha256` stay, as does the `signal_received` entry, which named only the hash. The run's
`bodies_purged` entry names them (`signals`). A purge of one action takes no signal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gateway.domain.retention import ENDED, PURGE_BATCH, PURGEABLE, PurgeReport, PurgeScope
from gateway.errors import NotFound
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn

_CHUNK = 500  # placeholders per IN list


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def _chunks(values: Sequence[str]) -> Iterable[Sequence[str]]:
    for i in range(0, len(values), _CHUNK):
        yield values[i : i + _CHUNK]


class RetentionOps(SqlBase):
    async def purge_bodies(self, scope: PurgeScope, *, by: str, reason: str, limit: int = PURGE_BATCH) -> PurgeReport:
        def tx(conn: Conn) -> tuple[PurgeReport, list[str]]:
            return self._purge(conn, scope, by, reason, limit)

        report, purged = await self._db.transaction(tx, durable=True)
        for sha256 in purged:
            self._bodies.forget(sha256)  # committed: a read of that payload stores its body again
        return report

    def _purge(self, conn: Conn, scope: PurgeScope, by: str, reason: str, limit: int) -> tuple[PurgeReport, list[str]]:
        now = self._clock.now()
        if scope.run_id is not None:
            self._run_row(conn, scope.run_id, scope.tenant)  # NotFound, also for another tenant's
        if scope.action_id is not None:
            if scope.tenant is None:
                raise NotFound(f"no action {scope.action_id}")
            self._action(conn, scope.action_id, scope.tenant)
        where = [f"bodies_purged_at IS NULL AND settled_at IS NOT NULL AND status IN ({_marks(PURGEABLE)})"]
        params: list[Any] = list(PURGEABLE)
        for column, value in (("tenant", scope.tenant), ("run_id", scope.run_id), ("action_id", scope.action_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if scope.before is not None:
            where.append("settled_at < ?")
            params.append(scope.before)
        rows = conn.execute(
            "SELECT action_id, run_id, payload_sha256, result_sha256 FROM actions WHERE "
            f"{' AND '.join(where)} ORDER BY settled_at, seq LIMIT ?",
            (*params, limit),
        ).fetchall()
        report = PurgeReport(more=len(rows) == limit)
        signals_of = self._purge_signals(conn, scope, now, limit)
        report.signals = sum(len(ids) for ids in signals_of.values())
        report.more = report.more or report.signals == limit
        if not rows:
            for run_id in sorted(signals_of):
                self._event(
                    conn, run_id, "bodies_purged", now, by=by, reason=reason, actions=[], bodies=[],
                    signals=signals_of[run_id],
                )  # fmt: skip
            report.runs = sorted(signals_of)
            return report, []
        chosen = [row["action_id"] for row in rows]
        named: dict[str, set[str]] = {}  # body -> the runs of the batch that name it
        for row in rows:
            for sha256 in (row["payload_sha256"], row["result_sha256"]):
                if sha256:
                    named.setdefault(sha256, set()).add(row["run_id"])
        kept = self._still_needed(conn, sorted(named), chosen)
        doomed = sorted(set(named) - kept)
        gone: list[str] = []
        for chunk in _chunks(doomed):
            gone += [
                r[0]
                for r in conn.execute(f"DELETE FROM blobs WHERE sha256 IN ({_marks(chunk)}) RETURNING sha256", chunk)
            ]
        for chunk in _chunks(chosen):
            conn.execute(f"UPDATE actions SET bodies_purged_at = ? WHERE action_id IN ({_marks(chunk)})", (now, *chunk))
        # Every run the purge touches is told in its chain: each run of the batch (its actions are
        # marked, whether or not a body went), and each run whose records name a body that went,
        # also one purged earlier whose body was kept then for someone else (bodies are shared).
        actions_of: dict[str, list[str]] = {}
        for row in rows:
            actions_of.setdefault(row["run_id"], []).append(row["action_id"])
        bodies_of: dict[str, list[str]] = {}
        for sha256, run_ids in sorted(self._naming_runs(conn, sorted(gone)).items()):
            for run_id in run_ids:
                bodies_of.setdefault(run_id, []).append(sha256)
        touched = sorted(actions_of.keys() | bodies_of.keys() | signals_of.keys())
        for run_id in touched:
            actions, bodies = actions_of.get(run_id, []), bodies_of.get(run_id, [])
            more: dict[str, Any] = {"signals": signals_of[run_id]} if run_id in signals_of else {}
            self._event(
                conn, run_id, "bodies_purged", now, by=by, reason=reason, actions=actions, bodies=bodies, **more
            )
        report.actions = len(chosen)
        report.purged = len(gone)
        report.kept = len(kept)
        report.runs = touched
        return report, gone

    @staticmethod
    def _purge_signals(conn: Conn, scope: PurgeScope, now: float, limit: int) -> dict[str, list[str]]:
        """Take the payloads of the signals of ended runs in `scope`; run -> its signals taken."""
        if scope.action_id is not None:
            return {}
        where = [f"s.payload_purged_at IS NULL AND r.status IN ({_marks(ENDED)})"]
        params: list[Any] = list(ENDED)
        for column, value in (("r.tenant", scope.tenant), ("r.run_id", scope.run_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if scope.before is not None:
            where.append("r.updated_at < ?")  # an ended run's row changes no more: when it ended
            params.append(scope.before)
        rows = conn.execute(
            "SELECT s.signal_id, s.run_id FROM signals s JOIN runs r ON r.run_id = s.run_id WHERE "
            f"{' AND '.join(where)} ORDER BY s.seq LIMIT ?",
            (*params, limit),
        ).fetchall()
        taken: dict[str, list[str]] = {}
        for row in rows:
            taken.setdefault(row["run_id"], []).append(row["signal_id"])
        ids = [row["signal_id"] for row in rows]
        for chunk in _chunks(ids):
            conn.execute(
                f"UPDATE signals SET payload = 'null', payload_purged_at = ? WHERE signal_id IN ({_marks(chunk)})",
                (now, *chunk),
            )
        return taken

    @staticmethod
    def _naming_runs(conn: Conn, bodies: list[str]) -> dict[str, set[str]]:
        """body -> every run whose action or approval rows name it (the runs whose chains do)."""
        named: dict[str, set[str]] = {}
        for chunk in _chunks(bodies):
            marks = _marks(chunk)
            for statement in (
                f"SELECT payload_sha256, run_id FROM actions WHERE payload_sha256 IN ({marks})",
                f"SELECT result_sha256, run_id FROM actions WHERE result_sha256 IN ({marks})",
                f"SELECT payload_sha256, run_id FROM approvals WHERE payload_sha256 IN ({marks})",
                f"SELECT proposed_sha256, run_id FROM approvals WHERE proposed_sha256 IN ({marks})",
            ):
                for sha256, run_id in conn.execute(statement, chunk).fetchall():
                    named.setdefault(sha256, set()).add(run_id)
        return named

    @staticmethod
    def _still_needed(conn: Conn, bodies: list[str], chosen: list[str]) -> set[str]:
        """Those of `bodies` a record outside the purge names: an action outside `chosen` whose
        bodies were not purged, a pending or approved approval, a checkpoint, a milestone's evidence."""
        kept: set[str] = set()
        for chunk in _chunks(bodies):
            marks = _marks(chunk)
            for column in ("payload_sha256", "result_sha256"):
                rows = conn.execute(
                    f"SELECT DISTINCT {column} FROM actions WHERE {column} IN ({marks}) "
                    f"AND bodies_purged_at IS NULL AND action_id NOT IN ({_marks(chosen)})",
                    (*chunk, *chosen),
                ).fetchall()
                kept.update(r[0] for r in rows)
            for statement in (
                "SELECT payload_sha256 FROM approvals WHERE status IN ('pending', 'approved') "
                f"AND payload_sha256 IN ({marks})",
                # An approved edit's proposal: what the approver's diff is read against.
                "SELECT proposed_sha256 FROM approvals WHERE status IN ('pending', 'approved') "
                f"AND proposed_sha256 IN ({marks})",
                f"SELECT body_sha256 FROM checkpoints WHERE body_sha256 IN ({marks})",
                f"SELECT evidence_sha256 FROM milestones WHERE evidence_sha256 IN ({marks})",
            ):
                kept.update(r[0] for r in conn.execute(statement, chunk).fetchall())
        return kept
