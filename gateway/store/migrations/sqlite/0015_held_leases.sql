-- Warrant store, version 15: leases the gateway holds for a worker key (issue 20,
-- docs/decisions/0022-held-leases-in-the-store.md).
--
-- A worker key that connects to /mcp/runs/{run_id} (or asks POST /api/runs/{id}/lease with
-- held: true) gets one lease per (key, run), held in this row rather than in a gateway process, so
-- every replica answers the same client alike. The lease token is never stored: it is derived
-- from the API key itself and this row's salt (gateway/held_leases.py); its hash is the lease's
-- row in `leases`, as for any token. A row is replaced only by an explicit takeover: a held
-- lease that another worker took over stays dead for that key.
CREATE TABLE IF NOT EXISTS held_leases (
    key_sha256  TEXT NOT NULL,                                -- sha256 of the API key (as api_keys keeps it)
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    salt        TEXT NOT NULL,
    token_hash  TEXT NOT NULL,                                -- the lease it holds (`leases`)
    created_at  REAL NOT NULL,
    PRIMARY KEY (key_sha256, run_id)
);
