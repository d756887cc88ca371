-- Warrant store (PostgreSQL), version 25: webhooks for every event type (issue 23, "Events
-- consumers can trust"; docs/events.md, docs/decisions/0025-events.md). A ledger entry's
-- deliveries are queued in the entry's own transaction; each names its run and event
-- (`evt_<run_id>_<seq>`), so that the pending ones of a run can be counted against the outbox's
-- cap, and what the cap turned away is counted per run (`event_drops`).
ALTER TABLE webhook_deliveries ADD COLUMN run_id TEXT;        -- NULL: a heartbeat, or a row from before
ALTER TABLE webhook_deliveries ADD COLUMN event_id TEXT;      -- NULL: a heartbeat, or a row from before
CREATE INDEX webhook_deliveries_run_pending ON webhook_deliveries (run_id) WHERE status = 'pending';

CREATE TABLE event_drops (
    run_id    TEXT PRIMARY KEY REFERENCES runs (run_id),
    dropped   BIGINT NOT NULL,                               -- deliveries not queued: the outbox was full
    first_at  DOUBLE PRECISION NOT NULL,
    last_at   DOUBLE PRECISION NOT NULL
);
