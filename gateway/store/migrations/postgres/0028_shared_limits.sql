-- Warrant store, version 28: limits shared by every run (issue 24; docs/decisions/0028-shared-limits.md).
-- A shared limit's calls in flight are the admitted actions of its tools, counted in the admit
-- transaction across every run and tenant (and replica): this index keeps that count to the few
-- rows in flight, newest first. No table of slots: a settle, or the orphan sweep marking a dead
-- process's calls unknown, frees one by changing the action's status; `created_at` bounds how long
-- a slot is held when nothing does (a process killed and never started again).
CREATE INDEX actions_shared_in_flight ON actions (tool, created_at) WHERE status = 'admitted';
