-- Warrant store, version 7: verified progress and recovery (docs/progress.md): checkpoints,
-- milestones, completion, revisions, successors and delegated sub-runs.

ALTER TABLE runs ADD COLUMN checkpoint_version INTEGER NOT NULL DEFAULT 0;  -- the newest checkpoint; 0: none
-- The spec_version the worker has read through warrant_status. A revision changes spec_version;
-- the run's calls are refused `spec_version_mismatch` until the two are equal again.
ALTER TABLE runs ADD COLUMN acked_spec_version TEXT;
UPDATE runs SET acked_spec_version = spec_version;
ALTER TABLE runs ADD COLUMN predecessor_run_id TEXT;                         -- a successor's predecessor
-- A child run's share carved out of its parent at creation: JSON {spend, tool_calls, writes}.
ALTER TABLE runs ADD COLUMN carved TEXT;
ALTER TABLE runs ADD COLUMN completion TEXT;                                 -- JSON: summary, milestones, uncertain
CREATE INDEX runs_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;

-- Every checkpoint is kept; runs.checkpoint_version names the newest. `good` turns 0 when a
-- re-check finds one of its artifacts changed or unreadable.
CREATE TABLE checkpoints (
    seq             INTEGER PRIMARY KEY,
    run_id          TEXT NOT NULL REFERENCES runs (run_id),
    version         INTEGER NOT NULL,
    epoch           INTEGER NOT NULL,
    worker          TEXT NOT NULL,
    body            TEXT NOT NULL,                            -- canonical JSON: artifacts, sources, next_operation
    body_sha256     TEXT NOT NULL,
    good            INTEGER NOT NULL DEFAULT 1,
    bad_reason      TEXT,
    inherited_from  TEXT,                                     -- the predecessor run it was copied from
    created_at      REAL NOT NULL,
    UNIQUE (run_id, version)
);

-- Each milestone's current state; every submission and change is also a chained entry.
CREATE TABLE milestones (
    run_id              TEXT NOT NULL REFERENCES runs (run_id),
    milestone_id        TEXT NOT NULL,
    status              TEXT NOT NULL,                        -- verified failed unverified pending_review invalidated
    spec_version        TEXT NOT NULL,                        -- the contract version it was checked under
    checks              TEXT NOT NULL,                        -- JSON: one result per check
    reasons             TEXT NOT NULL DEFAULT '[]',           -- JSON: why it is not verified
    depends             TEXT NOT NULL DEFAULT '{}',           -- JSON: artifacts and sources as read
    evidence_sha256     TEXT,                                 -- the submitted evidence, a blob
    review_approval_id  TEXT,
    submitted_by        TEXT,
    epoch               INTEGER,
    attempts            INTEGER NOT NULL DEFAULT 0,
    inherited_from      TEXT,
    updated_at          REAL NOT NULL,
    verified_at         REAL,
    PRIMARY KEY (run_id, milestone_id)
);

-- A review milestone's approval: only the named reviewer decides it.
ALTER TABLE approvals ADD COLUMN reviewer TEXT;
ALTER TABLE approvals ADD COLUMN milestone_id TEXT;

-- An operator accepted an unknown action as uncertain (JSON {by, at, note}): completion may go on,
-- and the completed run names it as what remains uncertain.
ALTER TABLE actions ADD COLUMN acknowledged TEXT;
