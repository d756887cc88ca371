-- Warrant store, version 6: the watchdog (gateway/watchdog.py) and webhook deliveries.

-- A run's last progress: its start, its last resume, and (issue 7) its last verified milestone.
-- NULL reads as created_at. The watchdog's `stalled` alert compares against it.
ALTER TABLE runs ADD COLUMN progress_at REAL;

-- What the sweep looks for on every tick, without scanning whole tables: live runs by deadline,
-- open approvals, unknown actions. Rows enter and leave these indexes only when their status
-- changes, so the gate's hot writes (reservations, chain heads) never touch them.
CREATE INDEX runs_live_deadline ON runs (deadline) WHERE status IN ('running', 'waiting', 'paused');
CREATE INDEX approvals_open ON approvals (run_id) WHERE status IN ('pending', 'approved');
CREATE INDEX actions_unknown ON actions (run_id) WHERE status = 'unknown';

-- One row per lease name ('watchdog'): the process that may act, until `expires_at` (store clock).
-- `heartbeat_at` is the last heartbeat queued to the webhooks, whoever held the lease then.
CREATE TABLE watch_leases (
    name          TEXT PRIMARY KEY,
    holder        TEXT NOT NULL,
    expires_at    REAL NOT NULL,
    acquired_at   REAL NOT NULL,
    heartbeat_at  REAL
);

-- Every alert raised, once per condition episode: the UNIQUE key is what makes several gateway
-- processes raise (and send) each alert once. Inserted in the transaction that appends the run's
-- `alert` entry and queues its deliveries.
CREATE TABLE watch_alerts (
    seq        INTEGER PRIMARY KEY,
    alert_id   TEXT NOT NULL UNIQUE,
    run_id     TEXT NOT NULL,
    tenant     TEXT NOT NULL,
    kind       TEXT NOT NULL,
    episode    TEXT NOT NULL,
    at         REAL NOT NULL,
    data       TEXT NOT NULL,                               -- JSON
    raised_by  TEXT NOT NULL,                               -- the gateway process
    UNIQUE (run_id, kind, episode)
);

-- The webhook outbox: one row per (alert or heartbeat, webhook). `body` is the exact JSON sent.
CREATE TABLE webhook_deliveries (
    seq            INTEGER PRIMARY KEY,
    delivery_id    TEXT NOT NULL UNIQUE,
    target         TEXT NOT NULL,                           -- the webhook's name
    kind           TEXT NOT NULL,
    body           TEXT NOT NULL,
    status         TEXT NOT NULL,                           -- pending delivered failed
    attempts       INTEGER NOT NULL DEFAULT 0,
    max_attempts   INTEGER NOT NULL,
    next_at        REAL NOT NULL,
    claimed_by     TEXT,
    claimed_until  REAL,
    last_error     TEXT,
    created_at     REAL NOT NULL,
    done_at        REAL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status = 'pending';
