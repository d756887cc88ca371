-- Warrant store, version 33: the retention purge reaches signal payloads (issue 24; docs/retention.md).
-- payload_purged_at: when the purge took the payload of a signal of an ended run (its payload
-- becomes the JSON null); the row, its payload_sha256 and its ledger entry (which holds only the
-- hash) stay. NULL: the payload is kept.
ALTER TABLE signals ADD COLUMN payload_purged_at DOUBLE PRECISION;
