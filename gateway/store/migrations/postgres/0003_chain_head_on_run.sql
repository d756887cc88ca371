-- Warrant store (PostgreSQL), version 3: each run's chain head lives on its run row. Appending an entry
-- already reads and writes that row (budget, lease), so the head no longer costs a SELECT and an
-- upsert of its own, nor a page of its own in every commit.

ALTER TABLE runs ADD COLUMN head_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN head_hash TEXT NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000';
ALTER TABLE runs ADD COLUMN head_mac TEXT;                  -- NULL: the run has no chain head

UPDATE runs SET
    head_seq = (SELECT h.seq FROM chain_heads h WHERE h.run_id = runs.run_id),
    head_hash = (SELECT h.hash FROM chain_heads h WHERE h.run_id = runs.run_id),
    head_mac = (SELECT h.mac FROM chain_heads h WHERE h.run_id = runs.run_id)
WHERE run_id IN (SELECT run_id FROM chain_heads);

DROP TABLE chain_heads;

-- The version 2 name, for whoever reads or rewrites heads with plain SQL. A one-table view of plain
-- columns: PostgreSQL updates it through to `runs` itself (SQLite needs an INSTEAD OF trigger).
CREATE VIEW chain_heads AS
    SELECT run_id, head_seq AS seq, head_hash AS hash, head_mac AS mac FROM runs WHERE head_mac IS NOT NULL;
