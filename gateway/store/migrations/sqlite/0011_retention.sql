-- Warrant store, version 11: retention (docs/retention.md). When the bodies an action names (its
-- payload and its result) were purged, by the schedule or on request; NULL: not purged yet. The
-- action row itself, its hashes and its chained entries are never purged.
ALTER TABLE actions ADD COLUMN bodies_purged_at REAL;
-- What the scheduled purge looks for: settled actions whose bodies have not been purged yet.
CREATE INDEX actions_unpurged ON actions (settled_at) WHERE bodies_purged_at IS NULL;
-- The purge asks, for each body, whether anything outside its selection still names it.
CREATE INDEX actions_result ON actions (result_sha256) WHERE result_sha256 IS NOT NULL;
CREATE INDEX actions_payload ON actions (payload_sha256);
