-- Warrant store, version 30: retry policies and dead letters (issue 24; docs/decisions/0030-retries.md).
--
-- actions.failed_attempts: the attempts of this action that failed (each `action_retrying` entry,
-- and the last one when the action settled failed); summed over the actions holding one operation
-- id in a lineage, it is what a tool's max_attempts bounds. runs.attempts_failed: the same summed
-- over the run, what a contract's `attempts` budget bounds.
-- dead_letters: an operation id given up after max_attempts failed attempts, once per (lineage,
-- operation id); an operator retries it (under a fresh operation id: retried_action_id), resolves
-- or drops it, with a reason.
ALTER TABLE actions ADD COLUMN failed_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN attempts_failed INTEGER NOT NULL DEFAULT 0;
CREATE TABLE dead_letters (
    seq               INTEGER PRIMARY KEY,
    dead_letter_id    TEXT NOT NULL UNIQUE,
    run_id            TEXT NOT NULL REFERENCES runs (run_id),
    tenant            TEXT NOT NULL,
    lineage_id        TEXT NOT NULL,
    operation_id      TEXT NOT NULL,
    tool              TEXT NOT NULL,
    payload_sha256    TEXT NOT NULL,
    action_id         TEXT NOT NULL,             -- the last failed action of the operation
    attempts          INTEGER NOT NULL,
    last_code         TEXT,
    last_message      TEXT,
    status            TEXT NOT NULL,             -- open, retried, resolved, dropped
    created_at        REAL NOT NULL,
    decided_by        TEXT,
    decided_at        REAL,
    reason            TEXT,
    retried_action_id TEXT,
    UNIQUE (lineage_id, operation_id)
);
CREATE INDEX dead_letters_run ON dead_letters (run_id, seq);
