-- Warrant store, version 27: waits and signals (issue 24; docs/decisions/0027-waits.md).
--
-- waits: the agent's warrant_wait, one row per wait; at most one open (ended_at NULL) per run,
-- which the store checks in the wait's transaction and a partial unique index holds. The
-- watchdog's sweep finds the open waits whose `until` has passed by waits_open_until (until_at).
-- signals: what POST /api/runs/{id}/signal recorded, once per (run, idempotency_key); payload is
-- its canonical JSON (at most 16 KB); wait_id names the wait it woke, if any.
CREATE TABLE waits (
    seq          INTEGER PRIMARY KEY,
    wait_id      TEXT NOT NULL UNIQUE,
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    reason       TEXT NOT NULL,
    until_at     REAL NOT NULL,
    on_timeout   TEXT NOT NULL,                -- resume, pause or fail
    wake_on      TEXT NOT NULL,                -- JSON: a list of signal names
    epoch        INTEGER NOT NULL,
    worker       TEXT NOT NULL,
    started_at   REAL NOT NULL,
    ended_at     REAL,
    cause        TEXT,                         -- signal, timeout, pause, cancel, fail, expire
    signal_id    TEXT
);
CREATE UNIQUE INDEX waits_open ON waits (run_id) WHERE ended_at IS NULL;
CREATE INDEX waits_open_until ON waits (until_at) WHERE ended_at IS NULL;
CREATE TABLE signals (
    seq             INTEGER PRIMARY KEY,
    signal_id       TEXT NOT NULL UNIQUE,
    run_id          TEXT NOT NULL REFERENCES runs (run_id),
    name            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    payload_sha256  TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    principal       TEXT NOT NULL,
    received_at     REAL NOT NULL,
    wait_id         TEXT,
    UNIQUE (run_id, idempotency_key)
);
CREATE INDEX signals_run ON signals (run_id, seq);
