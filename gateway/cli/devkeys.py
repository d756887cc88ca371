"""The development gateway's keys (`make run`): made once, kept across its restarts.

Three keys, so that the demo can be driven from end to end without making any by hand:

| variable            | key                                     | roles    | where it lives          |
| ---                 | ---                                     | ---      | ---                     |
| `WARRANT_ADMIN_KEY` | the configuration's bootstrap key (ops) | admin    | `key_env` of warrant.yaml |
| `APPROVER_KEY`      | a stored key named `approver`           | approver | the store, hashed       |
| `WORKER_KEY`        | a stored key named `agent`              | worker   | the store, hashed       |

The plaintext of all three is kept in `.warrant/dev.env`, created with mode 0600 (only its owner
reads it) in a folder of mode 0700, in shell syntax: `source .warrant/dev.env` sets them, with
`WARRANT_URL`, `WARRANT_API_KEY` (the worker key, what `warrant connect` takes) and a PATH that
holds `warrant`. The store keeps only the stored keys' sha256, as for any key. On a restart a key
from the file is used again while the store still finds it valid; one that is missing, revoked or
expired (or a store deleted) is made anew, and a valid key left under its name is revoked first,
with a reason. Production never uses this: its keys come from its secret store and
`warrant keys create`.
"""

from __future__ import annotations

import os
import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gateway.clock import SystemClock
from gateway.config import Settings
from gateway.domain.keys import api_key_hash, mint_api_key
from gateway.errors import ConfigError
from gateway.store.factory import open_store
from gateway.store.ports import KeyStore
from gateway.store.records import Principal

ENV_FILE = "dev.env"
ADMIN = "WARRANT_ADMIN_KEY"


@dataclass(frozen=True)
class StoredKey:
    variable: str
    name: str
    role: str


STORED = (StoredKey("APPROVER_KEY", "approver", "approver"), StoredKey("WORKER_KEY", "agent", "worker"))
REVOKE_REASON = "make run: .warrant/dev.env no longer holds this key; a new one replaces it"


def read_env_file(path: Path) -> dict[str, str]:
    """The `export NAME=value` lines of a file written by `write_env_file` (others are ignored)."""
    if not path.is_file():
        return {}
    values: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        words = shlex.split(line, comments=True)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, _, value = words[1].partition("=")
            values[name] = value
    return values


def write_env_file(path: Path, keys: Mapping[str, str], url: str, bin_dir: Path) -> None:
    """The file, replaced whole (written aside, then renamed), readable by its owner only."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = [
        "# make run's development keys (gateway/cli/devkeys.py): `source` this file. Only you can read it;",
        "# keep it out of shared places. The store holds only their sha256.",
        *(f"export {name}={shlex.quote(value)}" for name, value in keys.items()),
        f"export WARRANT_URL={shlex.quote(url)}",
        "# the CLI's key: the worker key, which `warrant connect` takes (another role: WARRANT_API_KEY=$APPROVER_KEY)",
        'export WARRANT_API_KEY="$WORKER_KEY"',
        f'export PATH={shlex.quote(str(bin_dir))}:"$PATH"',
    ]
    aside = path.with_name(path.name + ".new")
    aside.unlink(missing_ok=True)
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(aside, path)


def admin_key(environ: Mapping[str, str], kept: Mapping[str, str]) -> str:
    """The environment's WARRANT_ADMIN_KEY, else the one kept in the file, else a new one."""
    return environ.get(ADMIN) or kept.get(ADMIN) or "wk-admin-" + secrets.token_urlsafe(24)


def bootstrap_principal(settings: Settings, key: str) -> Principal:
    """The configuration's admin key that `key` is, as the principal that makes the stored keys.

    Raises: ConfigError when the configuration has no admin key with this value.
    """
    digest = api_key_hash(key)
    for entry in settings.api_keys:
        if entry.key_sha256 == digest and "admin" in entry.roles:
            return Principal(name=entry.name, tenant=entry.tenant, roles=entry.roles)
    raise ConfigError(f"{settings.path}: no admin key in api_keys takes {ADMIN}; make run needs one")


async def ensure_stored_keys(store: KeyStore, admin: Principal, kept: Mapping[str, str]) -> dict[str, str]:
    """Each of STORED: the kept key while the store finds it valid with its role, else a new one."""
    keys: dict[str, str] = {}
    for wanted in STORED:
        old = kept.get(wanted.variable)
        if old:
            found = await store.find_api_key(api_key_hash(old))
            if found is not None and found.tenant == admin.tenant and found.roles == frozenset({wanted.role}):
                keys[wanted.variable] = old
                continue
        await _revoke_named(store, admin, wanted.name)
        new = mint_api_key()
        await store.create_api_key(
            admin, name=wanted.name, roles=frozenset({wanted.role}), key_sha256=api_key_hash(new), expires_in=None
        )
        keys[wanted.variable] = new
    return keys


async def _revoke_named(store: KeyStore, admin: Principal, name: str) -> None:
    """A valid key under this name would keep the new one from being made (one valid key per name)."""
    now = SystemClock().now()
    cursor: str | None = None
    while True:
        page = await store.list_api_keys(admin.tenant, cursor=cursor, limit=100)
        for key in page.items:
            if key.name == name and key.status(now) == "active":
                await store.revoke_api_key(admin, key.key_id, reason=REVOKE_REASON)
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def prepare(settings: Settings, admin: str, kept: Mapping[str, str]) -> dict[str, str]:
    """Every development key by its variable, the stored ones made or checked in the store."""
    principal = bootstrap_principal(settings, admin)
    async with open_store(settings.database, clock=SystemClock(), ledger_key=settings.ledger_key) as store:
        stored = await ensure_stored_keys(store, principal, kept)
    return {ADMIN: admin, **stored}
