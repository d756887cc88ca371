-- Warrant store, version 5: spend a worker or operator reports against a run (model, runtime), and
-- when the run was last resumed and last checkpointed, which decides whether a charge is recovery.

-- Append-only. `amount` in the run's currency's minor units. `tag` is what the report sums by
-- (model, runtime, recovery); `kind` is what the reporter said (model, runtime). `ref` is the
-- reporter's idempotency reference: one charge per (run, ref).
CREATE TABLE charges (
    seq          INTEGER PRIMARY KEY,
    charge_id    TEXT NOT NULL UNIQUE,
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    tenant       TEXT NOT NULL,
    kind         TEXT NOT NULL,                            -- model | runtime
    tag          TEXT NOT NULL,                            -- model | runtime | recovery
    amount       INTEGER NOT NULL CHECK (amount >= 0),
    note         TEXT,
    ref          TEXT,
    principal    TEXT NOT NULL,                            -- the API key that reported it
    created_at   REAL NOT NULL
);
CREATE INDEX charges_run ON charges (run_id, seq);
CREATE UNIQUE INDEX charges_ref ON charges (run_id, ref) WHERE ref IS NOT NULL;

ALTER TABLE runs ADD COLUMN last_resumed_at REAL;         -- set by every resume
ALTER TABLE runs ADD COLUMN last_checkpoint_at REAL;      -- NULL until checkpoints are recorded (issue 7)
