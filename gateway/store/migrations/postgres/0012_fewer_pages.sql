-- Warrant store, version 12 (the same version as SQLite's, which also rebuilds its ledger table
-- WITHOUT ROWID; PostgreSQL has no such layout to choose). Fewer index entries written per call.
--
-- One partial index of the admitted actions instead of two on the same rows (0001's actions_open
-- by process, 0010's actions_in_flight by run).
DROP INDEX actions_open;
DROP INDEX actions_in_flight;
CREATE INDEX actions_in_flight ON actions (run_id, process_id) WHERE status = 'admitted';
-- The purge looks for settled actions only: an action enters this index when it settles.
DROP INDEX actions_unpurged;
CREATE INDEX actions_unpurged ON actions (settled_at) WHERE bodies_purged_at IS NULL AND settled_at IS NOT NULL;
