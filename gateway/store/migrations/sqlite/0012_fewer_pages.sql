-- Warrant store, version 12: fewer pages written by every call (bench/README.md, "issue 2").
-- Nothing is dropped that a query needs; what changes is how many B-trees a call touches.
--
-- One partial index of the admitted actions instead of two on the same rows (0001's actions_open
-- by process, 0010's actions_in_flight by run): an admit counts a run's calls in flight by run_id,
-- the start-up and a replica's sweep scan every admitted action, a handful.
DROP INDEX actions_open;
DROP INDEX actions_in_flight;
CREATE INDEX actions_in_flight ON actions (run_id, process_id) WHERE status = 'admitted';
-- The purge looks for settled actions only (its query says settled_at IS NOT NULL): an action
-- enters this index when it settles, not at its admit too (where it sat under NULL, then moved).
DROP INDEX actions_unpurged;
CREATE INDEX actions_unpurged ON actions (settled_at) WHERE bodies_purged_at IS NULL AND settled_at IS NOT NULL;
-- The ledger's rows live in their primary key's B-tree (run_id, seq): one tree written per entry,
-- not a rowid table and an index beside it. Rows are read by run and seq only.
CREATE TABLE events_by_key (
    run_id      TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    type        TEXT NOT NULL,
    at          REAL NOT NULL,
    body        TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO events_by_key (run_id, seq, type, at, body, prev_hash, hash)
    SELECT run_id, seq, type, at, body, prev_hash, hash FROM events ORDER BY run_id, seq;
DROP TABLE events;
ALTER TABLE events_by_key RENAME TO events;
