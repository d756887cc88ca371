-- Warrant store, version 4: API keys made with `warrant keys create`, and the record of every
-- change to them. The key itself is never stored: only its sha256 (gateway/domain/keys.py).

CREATE TABLE api_keys (
    seq           INTEGER PRIMARY KEY,                      -- list order and cursors
    key_id        TEXT NOT NULL UNIQUE,
    tenant        TEXT NOT NULL,
    name          TEXT NOT NULL,                            -- the principal's name: one valid key per name
    roles         TEXT NOT NULL,                            -- JSON array, sorted
    key_sha256    TEXT NOT NULL UNIQUE,                     -- every operator request looks this up
    created_at    REAL NOT NULL,
    created_by    TEXT NOT NULL,
    expires_at    REAL,                                     -- NULL: never; a rotation sets it
    revoked_at    REAL,
    revoked_by    TEXT,
    rotated_from  TEXT,                                     -- the key_id this key replaced
    rotated_to    TEXT                                      -- the key_id that replaced this key
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, seq);
CREATE INDEX api_keys_name ON api_keys (tenant, name) WHERE revoked_at IS NULL;

-- Append-only: key_created, key_revoked, key_rotated, each with who and when. Not hash-chained
-- (each run's history is; keys belong to no run).
CREATE TABLE key_events (
    seq      INTEGER PRIMARY KEY,
    tenant   TEXT NOT NULL,
    key_id   TEXT NOT NULL,
    type     TEXT NOT NULL,
    at       REAL NOT NULL,
    by       TEXT NOT NULL,
    data     TEXT NOT NULL                                  -- JSON
);
CREATE INDEX key_events_tenant ON key_events (tenant, seq);
