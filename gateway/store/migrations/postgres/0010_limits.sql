-- Warrant store (PostgreSQL), version 10: rate limits and the per-run concurrency cap
-- (gateway/limits.py, docs/limits.md), counted in the database so every replica sees the same counts.

-- One row per limited scope ('tenant:acme', 'key:key_...', 'run:run_...'): its theoretical
-- arrival time under the generic cell rate algorithm (gateway/domain/limits.py), database clock.
-- Updated in place by the transaction that admits a call (or an API request); never swept: a row
-- whose tat has passed means the same as no row.
CREATE TABLE rate_limits (
    scope  TEXT PRIMARY KEY,
    tat    DOUBLE PRECISION NOT NULL
);

-- The admit transaction counts the run's calls in flight (admitted, not settled): few rows, found
-- without reading the run's settled actions.
CREATE INDEX actions_in_flight ON actions (run_id) WHERE status = 'admitted';
