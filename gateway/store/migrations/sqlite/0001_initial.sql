-- Warrant store, version 1. Times are REAL seconds since the Unix epoch (UTC). Money is INTEGER
-- minor units. Every row that belongs to a tenant carries it, and every query filters on it.

CREATE TABLE runs (
    seq                   INTEGER PRIMARY KEY,  -- list order and cursors
    run_id                TEXT NOT NULL UNIQUE,
    tenant                TEXT NOT NULL,
    lineage_id            TEXT NOT NULL,
    parent_run_id         TEXT,
    status                TEXT NOT NULL,
    status_reason         TEXT,
    spec_version          TEXT NOT NULL,
    contract              TEXT NOT NULL,                      -- canonical JSON of the contract
    currency              TEXT NOT NULL,
    owner                 TEXT NOT NULL,
    created_by            TEXT NOT NULL,
    created_at            REAL NOT NULL,
    updated_at            REAL NOT NULL,
    deadline              REAL NOT NULL,
    lease_ttl             REAL NOT NULL,
    epoch                 INTEGER NOT NULL DEFAULT 0,        -- the fencing token
    lease_worker          TEXT,
    lease_granted_by      TEXT,
    lease_expires_at      REAL,
    spend_limit           INTEGER NOT NULL,
    spend_reserved        INTEGER NOT NULL DEFAULT 0,
    spend_spent           INTEGER NOT NULL DEFAULT 0,
    tool_calls_limit      INTEGER NOT NULL,
    tool_calls_reserved   INTEGER NOT NULL DEFAULT 0,
    tool_calls_spent      INTEGER NOT NULL DEFAULT 0,
    writes_limit          INTEGER NOT NULL,
    writes_reserved       INTEGER NOT NULL DEFAULT 0,
    writes_spent          INTEGER NOT NULL DEFAULT 0,
    active_seconds_limit  INTEGER NOT NULL,
    active_seconds_spent  REAL NOT NULL DEFAULT 0,
    active_since          REAL,                               -- set while time accrues
    count_waiting         INTEGER NOT NULL DEFAULT 0,
    CHECK (spend_spent + spend_reserved >= 0),
    CHECK (tool_calls_reserved >= 0 AND writes_reserved >= 0 AND spend_reserved >= 0)
);
CREATE INDEX runs_tenant ON runs (tenant, seq);

CREATE TABLE leases (
    token_hash   TEXT PRIMARY KEY,                            -- sha256 of the token; the token is never stored
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    epoch        INTEGER NOT NULL,
    worker       TEXT NOT NULL,
    granted_by   TEXT NOT NULL,
    granted_at   REAL NOT NULL,
    UNIQUE (run_id, epoch)
);

CREATE TABLE actions (
    seq               INTEGER PRIMARY KEY,
    action_id         TEXT NOT NULL UNIQUE,
    run_id            TEXT NOT NULL REFERENCES runs (run_id),
    tenant            TEXT NOT NULL,
    lineage_id        TEXT NOT NULL,
    tool              TEXT NOT NULL,
    effect            TEXT NOT NULL,                          -- read | write
    operation_id      TEXT,                                   -- writes only
    payload_sha256    TEXT NOT NULL,
    idempotency_key   TEXT,
    status            TEXT NOT NULL,
    code              TEXT,
    reason            TEXT,
    epoch             INTEGER,
    worker            TEXT,
    approval_id       TEXT,
    repeat_of         TEXT,
    reserved_spend    INTEGER NOT NULL DEFAULT 0,
    reserved_calls    INTEGER NOT NULL DEFAULT 0,
    reserved_writes   INTEGER NOT NULL DEFAULT 0,
    actual_spend      INTEGER,
    receipt           TEXT,                                   -- JSON: id, status, digest
    result_sha256     TEXT,                                   -- the stored result, for replay
    process_id        TEXT,                                   -- which gateway process dispatched it
    created_at        REAL NOT NULL,
    settled_at        REAL
);
CREATE INDEX actions_run ON actions (run_id, seq);
-- Open actions only: entries leave the index when they settle, so it stays a few pages.
CREATE INDEX actions_open ON actions (process_id) WHERE status = 'admitted';
-- One live attempt per operation in a lineage: failed and rejected attempts do not hold the id.
CREATE UNIQUE INDEX actions_operation ON actions (lineage_id, operation_id)
    WHERE operation_id IS NOT NULL AND status IN ('admitted', 'succeeded', 'unknown', 'compensated');

CREATE TABLE approvals (
    seq               INTEGER PRIMARY KEY,
    approval_id       TEXT NOT NULL UNIQUE,
    run_id            TEXT NOT NULL REFERENCES runs (run_id),
    tenant            TEXT NOT NULL,
    tool              TEXT NOT NULL,
    payload_sha256    TEXT NOT NULL,
    spec_version      TEXT NOT NULL,
    tool_def_sha256   TEXT NOT NULL,
    status            TEXT NOT NULL,                          -- pending approved denied expired superseded used
    role              TEXT NOT NULL,
    on_expiry         TEXT NOT NULL,
    valid_for         REAL NOT NULL,
    requested_by      TEXT NOT NULL,
    evidence          TEXT,
    rationale         TEXT,
    created_at        REAL NOT NULL,
    decide_by         REAL NOT NULL,
    valid_until       REAL,
    decided_by        TEXT,
    decided_at        REAL,
    note              TEXT,
    action_id         TEXT
);
CREATE INDEX approvals_binding ON approvals (run_id, tool, payload_sha256);
CREATE INDEX approvals_tenant ON approvals (tenant, status, seq);

-- Bodies (payloads, results) apart from the chained rows, by content hash, so retention can purge
-- a body while the chain still verifies.
CREATE TABLE blobs (
    sha256      TEXT PRIMARY KEY,
    body        BLOB NOT NULL,
    created_at  REAL NOT NULL
);

-- Each run's history is its own hash chain. `body` is the canonical JSON the hash covers.
CREATE TABLE events (
    run_id      TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    type        TEXT NOT NULL,
    at          REAL NOT NULL,
    body        TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- The head of each chain, MAC'd with the ledger key (held in the environment, never stored).
CREATE TABLE chain_heads (
    run_id      TEXT PRIMARY KEY,
    seq         INTEGER NOT NULL,
    hash        TEXT NOT NULL,
    mac         TEXT NOT NULL
);
