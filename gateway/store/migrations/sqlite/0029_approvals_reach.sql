-- Warrant store, version 29: approvals that reach people and need not stop the run (issue 24;
-- docs/decisions/0029-approvals-reach.md).
--
-- approvals.blocks_run: 1, while it is pending the run is waiting and its other writes are refused
-- `run_waiting` (as before); 0, the run goes on. approvals.approvers: JSON list of the key names or
-- ids that may decide it (NULL: anyone with its role). approvals.escalate_at: when the watchdog
-- raises `approval_escalated` if it is still pending (NULL: never). approvals.destination: where
-- the call goes, as the adapter says it (the alerts name it; never the payload).
ALTER TABLE approvals ADD COLUMN blocks_run INTEGER NOT NULL DEFAULT 1;
ALTER TABLE approvals ADD COLUMN approvers TEXT;
ALTER TABLE approvals ADD COLUMN escalate_at REAL;
ALTER TABLE approvals ADD COLUMN destination TEXT;
