"""The store's ports (gateway/store/ports.py): both back ends implement every role, `Store` is the
roles and nothing else, and the shared transactions (gateway/store/sql/) name neither driver."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import gateway.store
from gateway.store import ports
from gateway.store.postgres import PostgresStore
from gateway.store.sql import SqlStore
from gateway.store.sqlite import SQLiteStore
from tests.harness import LEDGER_KEY, ManualClock

BACK_ENDS = [SQLiteStore, PostgresStore]
ROLES = [
    value
    for value in vars(ports).values()
    if inspect.isclass(value) and getattr(value, "_is_protocol", False) and value.__module__ == ports.__name__
]


def members(protocol: type) -> set[str]:
    """A protocol's members, its bases' included: methods, properties and annotated attributes."""
    found: set[str] = set()
    for cls in protocol.__mro__:
        if cls.__module__ != ports.__name__:
            continue
        found |= {name for name in vars(cls) if not name.startswith("_")}
        found |= {name for name in vars(cls).get("__annotations__", {}) if not name.startswith("_")}
    return found


def instances() -> list[object]:
    """One store of each back end, constructed but never opened (no file, no connection)."""
    clock = ManualClock()
    return [
        SQLiteStore(":memory:", clock=clock, ledger_key=LEDGER_KEY),
        PostgresStore("postgresql://warrant@127.0.0.1:1/never_opened", clock=clock, ledger_key=LEDGER_KEY),
    ]


def test_the_roles_are_found() -> None:
    names = {role.__name__ for role in ROLES}
    assert {"Store", "RunStore", "GateStore", "ApprovalStore", "LeaseStore", "AuditStore", "OAuthStore"} <= names
    assert names == set(ports.__all__) - {"CancelNotices"}


@pytest.mark.parametrize("back_end", BACK_ENDS, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.__name__)
def test_each_back_end_implements_every_method_of_every_role(back_end: type, role: type) -> None:
    assert SqlStore in back_end.__mro__ and ports.Store in back_end.__mro__
    for name in sorted(members(role)):
        owner = next((cls for cls in back_end.__mro__ if name in vars(cls)), None)
        if owner is None:  # an attribute the store sets when constructed (refusal_limits)
            assert name in vars(role).get("__annotations__", {}) or any(
                name in vars(base).get("__annotations__", {}) for base in role.__mro__
            ), f"{back_end.__name__} has no {name}"
            continue
        assert not getattr(owner, "_is_protocol", False), (
            f"{back_end.__name__}.{name} is only {owner.__name__}'s declaration: no back end implements it"
        )


def test_every_member_is_found_on_a_constructed_store() -> None:
    for store in instances():
        for name in members(ports.Store):
            assert hasattr(store, name), f"{type(store).__name__} has no {name}"


def test_store_is_the_union_of_the_roles_and_declares_nothing_of_its_own() -> None:
    roles = [role for role in ROLES if role is not ports.Store]
    assert members(ports.Store) == set().union(*(members(role) for role in roles))
    assert {name for name in vars(ports.Store) if not name.startswith("_")} == set()
    for role in roles:
        assert role in ports.Store.__mro__ or role in (ports.ReconcileStore, ports.WatchdogStore)


def test_a_back_end_without_its_hooks_cannot_be_built() -> None:
    """What differs per back end is an abstract hook on `SqlBase`: a back end missing one fails
    when constructed, not when a transaction first needs it."""

    class Bare(SqlStore):
        pass

    with pytest.raises(TypeError) as refused:
        Bare(None, clock=ManualClock(), ledger_key=LEDGER_KEY)  # type: ignore[abstract,arg-type]
    for hook in ("_aside", "_process_alive", "_announce_hard_cancel"):
        assert hook in str(refused.value)


def test_the_shared_transactions_import_neither_driver() -> None:
    """gateway/store/sql/ runs over the connection protocol only: sqlite3, aiosqlite and psycopg
    belong to the back ends."""
    folder = Path(gateway.store.__file__).parent / "sql"
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                root = name.split(".")[0]
                assert root not in {"sqlite3", "aiosqlite", "psycopg", "psycopg_pool"}, f"{path.name} imports {name}"
                assert not name.startswith(("gateway.store.sqlite", "gateway.store.postgres")), (
                    f"{path.name} imports the back end {name}"
                )
