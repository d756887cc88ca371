"""The store: the authoritative record of every run. One interface, chosen by URL in `open_store`.

The interface is a set of role protocols (ports.py: `RunStore`, `GateStore`, `ApprovalStore`,
`LeaseStore`, ...), each the part of the store one kind of consumer uses; `Store` is their union.
The records it takes and hands back are plain, immutable values (records.py, progress_records.py,
reports.py). Both back ends are one `SqlStore` (sql/: the transactions, written once) over a
database of their own: SQLite (sqlite/) and PostgreSQL (postgres/); factory.py picks one from the
URL. migrations/ holds each back end's schema. The other modules here are neither back end's:
the hash chain and its checks (chain.py, replay.py, ledger_scan.py, anchor.py), evidence bundles
(bundle.py, action_spool.py), backups (backup.py), the bound on long reads (long_reads.py) and
the schema's version check (schema.py).

A new store method is added in four steps: its port (the method and its docstring on the role
protocol in ports.py that its consumer takes), its transaction in sql/ (written once for both
back ends), a back-end hook only where SQLite and PostgreSQL must differ (an abstract method on
`SqlBase`, implemented in sqlite/store.py and postgres/store.py), and its contract test in
tests/store/, which runs on both back ends. gateway/store/sql/__init__.py says more.

Like every package's face (gateway/faces.py), this one imports a leaf only when one of its names is
first asked for: `open_store` loads both back ends and psycopg, which `warrant` does not pay for
before it knows its command.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.store.factory import migrate, open_store, serving
    from gateway.store.ports import (
        ApprovalStore,
        AuditStore,
        CancelNotices,
        CancelStore,
        DeliveryStore,
        GateStore,
        HealthStore,
        KeyStore,
        LeaseStore,
        LedgerStore,
        LifecycleStore,
        OAuthStore,
        PinStore,
        ProgressStore,
        RateStore,
        ReconcileStore,
        RecordStore,
        RetentionStore,
        RunStore,
        Store,
        UsageStore,
        WatchdogStore,
        WatchStore,
    )
    from gateway.store.records import (
        ActionRecord,
        AdmitResult,
        Admitted,
        ApprovalRecord,
        EventRecord,
        Held,
        Intent,
        Page,
        Principal,
        Refused,
        RunRecord,
        SettleResult,
        Stale,
        TokenInfo,
    )
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "ActionRecord",
    "AdmitResult",
    "Admitted",
    "ApprovalRecord",
    "ApprovalStore",
    "AuditStore",
    "CancelNotices",
    "CancelStore",
    "DeliveryStore",
    "EventRecord",
    "GateStore",
    "HealthStore",
    "Held",
    "Intent",
    "KeyStore",
    "LeaseStore",
    "LedgerStore",
    "LifecycleStore",
    "OAuthStore",
    "Page",
    "PinStore",
    "Principal",
    "ProgressStore",
    "RateStore",
    "ReconcileStore",
    "RecordStore",
    "Refused",
    "RetentionStore",
    "RunRecord",
    "RunStore",
    "SettleResult",
    "Stale",
    "Store",
    "TokenInfo",
    "UsageStore",
    "WatchStore",
    "WatchdogStore",
    "migrate",
    "open_store",
    "serving",
]
