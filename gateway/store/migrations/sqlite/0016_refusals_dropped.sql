-- Warrant store, version 16: refusals the limits did not record are counted (issue 26).
--
-- Past `limits.refusals` a refused call is answered but not recorded (docs/limits.md); each one
-- is counted here instead, by the run and lease epoch (one lease token) that made it, apart by the
-- limit that dropped it: `by_rate` (the token's refusal rate), `by_cap` (the run's
-- `max_per_run`). One row per token that had any dropped, however many: the count is bounded
-- storage. Epoch 0: a call made without a lease epoch. Written by a transaction of its own after
-- the refused one rolled back (gateway/store/sqlite_base.py); counts stop at 2^53 - 1. IF NOT
-- EXISTS: a store wound back to an older version by hand (tests do) migrates again.
CREATE TABLE IF NOT EXISTS refusals_dropped (
    run_id    TEXT NOT NULL,
    epoch     INTEGER NOT NULL,
    tenant    TEXT NOT NULL,
    by_rate   INTEGER NOT NULL DEFAULT 0,
    by_cap    INTEGER NOT NULL DEFAULT 0,
    first_at  REAL NOT NULL,
    last_at   REAL NOT NULL,
    PRIMARY KEY (run_id, epoch)
);
CREATE INDEX IF NOT EXISTS refusals_dropped_tenant ON refusals_dropped (tenant);
