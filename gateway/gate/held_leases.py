"""Leases the gateway holds for a worker key: a client configured once per worker, not once per run.

A worker key that names its run (`/mcp/runs/{run_id}`, or `POST /api/runs/{id}/lease` with
`held: true`, what `warrant stdio --run` asks) gets one lease for that (key, run). Its row lives in
the store (`held_leases`), never in a process, so every replica answers the same client alike;
its token is derived from the key and the row's salt (gateway/domain/leases.py `held_token`),
so no secret is stored. The first request grants it as any lease (`lease_held` while another
worker's is live); after that the key always presents that same token, and the gate decides: a
takeover or a cancel kills it exactly as it kills a pasted token, and it stays dead for the key
until someone takes the lease over explicitly for it (`takeover: true`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from gateway.domain.leases import held_token, new_salt, token_hash
from gateway.store.ports import LeaseStore
from gateway.store.records import Principal, RunRecord


@dataclass(frozen=True)
class Held:
    token: str
    epoch: int  # the epoch of this key's lease (the run's own when it still holds)
    worker: str
    created: bool
    run: RunRecord

    @property
    def current(self) -> bool:
        return self.epoch == self.run.epoch


def key_sha256(api_key: str) -> str:
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()


async def held_token_for(store: LeaseStore, principal: Principal, api_key: str, run_id: str) -> str:
    """The token of this key's held lease on the run, granting it on the first request (one store
    read afterwards). Raises: as `Store.hold_worker_lease`."""
    digest = key_sha256(api_key)
    salt = await store.held_salt(digest, run_id)
    if salt is None:
        salt = new_salt()
        held = await store.hold_worker_lease(
            principal, digest, run_id, principal.name, salt, held_token(api_key, run_id, salt)
        )
        salt = held.salt  # another request's, when it granted first
    return held_token(api_key, run_id, salt)


async def hold(
    store: LeaseStore, principal: Principal, api_key: str, run_id: str, worker: str, *, takeover: bool = False
) -> Held:
    """This key's held lease on the run as it stands (granted now if there was none, or replaced
    with `takeover`). Raises: as `Store.hold_worker_lease`."""
    salt = new_salt()
    record = await store.hold_worker_lease(
        principal, key_sha256(api_key), run_id, worker, salt, held_token(api_key, run_id, salt), takeover=takeover
    )
    token = held_token(api_key, run_id, record.salt)
    info = await store.authenticate(token_hash(token))
    assert info is not None, "a held lease's token is a lease's"
    return Held(token, info.epoch, info.worker, record.created, info.run)
