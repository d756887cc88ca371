-- Warrant store, version 13: a terminal run has at most one successor (issue 26).
--
-- The predecessor names its successor in `successor_run_id`, written by the same transaction that
-- inserts the successor, and only while it is still NULL (gateway/store/sqlite_lineage.py): a
-- second request finds it set and is refused 409 successor_exists. A run succeeds at most one run
-- (the unique index), so one slot on the predecessor is one successor.
--
-- A store that already holds several successors of one run: the earliest (by created_at, then
-- run_id) becomes the linked successor; the later ones keep their rows and histories as they are
-- (they still name their predecessor) and are not cancelled here: a migration cannot append to
-- the hash chains. docs/progress.md says how an operator finds and ends them.
ALTER TABLE runs ADD COLUMN successor_run_id TEXT;
UPDATE runs SET successor_run_id = (
    SELECT s.run_id FROM runs s WHERE s.predecessor_run_id = runs.run_id ORDER BY s.created_at, s.run_id LIMIT 1
) WHERE run_id IN (SELECT predecessor_run_id FROM runs WHERE predecessor_run_id IS NOT NULL);
CREATE UNIQUE INDEX runs_successor ON runs (successor_run_id) WHERE successor_run_id IS NOT NULL;
