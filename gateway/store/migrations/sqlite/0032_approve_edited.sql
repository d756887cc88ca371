-- Warrant store, version 32: an approver may approve an edited payload (issue 24;
-- docs/decisions/0032-approve-edited.md).
--
-- approvals.proposed_sha256: the hash of the payload the agent proposed, when the approver approved an
-- edited version of it (then payload_sha256 is the edited payload's, the one the approval binds);
-- NULL when the approval binds the payload as proposed.
ALTER TABLE approvals ADD COLUMN proposed_sha256 TEXT;
CREATE INDEX approvals_proposed ON approvals (run_id, tool, proposed_sha256) WHERE proposed_sha256 IS NOT NULL;
