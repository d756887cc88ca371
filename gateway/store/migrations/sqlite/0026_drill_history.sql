-- Warrant store, version 26: the pilot report's records (issue 23; docs/decisions/0026-reports.md).
--
-- drill_runs: each `warrant drill` run recorded against this store, newest kept (a retention cap:
-- the store deletes the oldest past DRILL_HISTORY_KEEP per tenant). summary and results are JSON,
-- what `warrant drill --json` writes.
-- runs.replays: calls answered with a recorded result instead of running again (a replay by
-- operation id): the report's `duplicates_prevented`, with the refusals that did the same.
CREATE TABLE drill_runs (
    seq         INTEGER PRIMARY KEY,
    drill_id    TEXT NOT NULL UNIQUE,
    tenant      TEXT NOT NULL,
    started_at  REAL NOT NULL,
    seconds     REAL NOT NULL,
    profile     TEXT NOT NULL,
    modes       TEXT NOT NULL,                 -- active, restart or both
    sabotage    TEXT,                          -- the safeguard turned off, if any
    passed      INTEGER NOT NULL,
    failed      INTEGER NOT NULL,
    skipped     INTEGER NOT NULL,
    ok          INTEGER NOT NULL,              -- 1: nothing failed (or, sabotaged, exactly what should)
    summary     TEXT NOT NULL,                 -- JSON
    results     TEXT NOT NULL,                 -- JSON: one object per case run
    recorded_by TEXT NOT NULL
);
CREATE INDEX drill_runs_tenant ON drill_runs (tenant, seq);
ALTER TABLE runs ADD COLUMN replays INTEGER NOT NULL DEFAULT 0;
