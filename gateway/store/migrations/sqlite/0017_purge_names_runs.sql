-- Warrant store, version 17: a purge tells every run whose records name a body it deletes
-- (gateway/store/sqlite_retention.py), approvals included; they are found by payload here.
CREATE INDEX IF NOT EXISTS approvals_payload ON approvals (payload_sha256);
