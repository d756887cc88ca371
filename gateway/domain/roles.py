"""Who may do what: DESIGN.md's role table, written once as data and enforced from it.

Each API route names one permission; a principal holds a permission when any of its roles
grants it. Every key belongs to one tenant, and every query is scoped to it.
"""

from __future__ import annotations

from typing import Literal, Protocol

from gateway.errors import Forbidden


class RoleHolder(Protocol):
    """Who asks, as far as the role table cares (gateway/store/records.py `Principal` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def roles(self) -> frozenset[str]: ...


Role = Literal["admin", "operator", "approver", "auditor", "worker"]

PERMISSIONS: frozenset[str] = frozenset(
    {
        "runs.create",
        "runs.read",
        "runs.control",  # pause, resume, cancel, narrow-revise, successor
        "runs.widen",  # widen a revision, extend a successor's deadline: admin only
        "leases.acquire",
        "approvals.read",
        "approvals.decide",
        "actions.read",
        "actions.resolve",
        "events.read",
        "ledger.verify",  # also exports a run's evidence bundle: what verifying offline needs
        "usage.report",
        "tools.read",  # the catalog with pin states and pending definitions
        "tools.accept",  # accept a downstream tool definition (gateway-wide): admin only
        "keys.manage",  # create, list, revoke and rotate the tenant's API keys: admin only
        "metrics.read",  # /metrics: the tenant's gauges name its runs
        "ledger.purge",  # purge settled actions' bodies on request (docs/retention.md): admin only
        "runs.signal",  # send a run an outside event (docs/decisions/0027-waits.md): operators and its workers
    }
)

ROLES: dict[str, frozenset[str]] = {
    "admin": PERMISSIONS,
    "operator": frozenset(
        {
            "runs.create",
            "runs.read",
            "runs.control",
            "leases.acquire",
            "actions.read",
            "actions.resolve",
            "events.read",
            "approvals.read",
            "tools.read",
            "usage.report",
            "runs.signal",
        }
    ),
    "approver": frozenset({"approvals.read", "approvals.decide", "tools.read"}),
    "auditor": frozenset(
        {"runs.read", "actions.read", "events.read", "ledger.verify", "approvals.read", "tools.read", "metrics.read"}
    ),
    "worker": frozenset({"leases.acquire", "usage.report", "runs.signal"}),
}


def permits(principal: RoleHolder, permission: str) -> bool:
    if permission not in PERMISSIONS:
        raise ValueError(f"unknown permission {permission!r}")
    return any(permission in ROLES.get(role, frozenset()) for role in principal.roles)


def require(principal: RoleHolder, permission: str) -> None:
    """Raises: Forbidden when none of the principal's roles grants `permission`."""
    if not permits(principal, permission):
        raise Forbidden(f"the key {principal.name!r} ({', '.join(sorted(principal.roles))}) may not {permission}")
