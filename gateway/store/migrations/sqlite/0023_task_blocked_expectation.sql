-- Warrant store, version 23: how long a task may stay blocked before the operator hears of it
-- (issue 23, escalation; docs/tasks.md). Seconds; NULL: the contract's plan.blocked_expectation.
-- The watchdog alerts `task_blocked_long` once per blocked spell (tasks.updated_at names its start).
ALTER TABLE tasks ADD COLUMN blocked_expectation INTEGER;
CREATE INDEX tasks_blocked ON tasks (run_id) WHERE status = 'blocked';
