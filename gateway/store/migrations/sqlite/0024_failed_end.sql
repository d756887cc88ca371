-- Warrant store, version 24: the failed end of a run (issue 23; docs/decisions/0024-failed-end.md).
-- status_cause: who or what ended the run and why, as JSON {by, reason, rule} (rule: the contract's
-- rule that failed it, NULL for an operator); NULL for every other status. completion_refusals:
-- the completion claims the gateway refused (`completion.max_completion_attempts` counts them).
ALTER TABLE runs ADD COLUMN status_cause TEXT;
ALTER TABLE runs ADD COLUMN completion_refusals INTEGER NOT NULL DEFAULT 0;
