"""`SqlStore`: every role of the store (gateway/store/ports.py) as transactions over a `Database`
(gateway/store/sql/connection.py), split by concern into the parts it inherits."""

from __future__ import annotations

from gateway.store.ports import Store
from gateway.store.sql.approvals import ApprovalOps
from gateway.store.sql.audit import AuditOps
from gateway.store.sql.drills import DrillOps
from gateway.store.sql.gate import GateOps
from gateway.store.sql.held import HeldLeaseOps
from gateway.store.sql.keys import KeyOps
from gateway.store.sql.oauth import OAuthOps
from gateway.store.sql.progress import ProgressOps
from gateway.store.sql.record import RecordOps
from gateway.store.sql.reports import ReportOps
from gateway.store.sql.restore import RestoreOps
from gateway.store.sql.retention import RetentionOps
from gateway.store.sql.runs import RunOps
from gateway.store.sql.stats import StatsOps
from gateway.store.sql.tasks import TaskOps
from gateway.store.sql.usage import UsageOps
from gateway.store.sql.watch import WatchOps

__all__ = ["SqlStore"]


class SqlStore(
    RunOps,  # with LineageOps
    GateOps,  # with LeaseOps, LimitOps
    HeldLeaseOps,
    OAuthOps,
    ApprovalOps,
    ProgressOps,
    TaskOps,
    RecordOps,
    AuditOps,
    KeyOps,
    StatsOps,
    UsageOps,
    ReportOps,
    DrillOps,
    WatchOps,  # with WaitOps
    RestoreOps,
    RetentionOps,
    Store,
):
    """The store's transactions, written once for both back ends. Abstract: a back end provides
    its database and the hooks of `SqlBase` (`_aside`, `_process_alive`, `_announce_hard_cancel`),
    `cancel_notices` and `health` (gateway/store/sqlite/store.py, gateway/store/postgres/store.py)."""
