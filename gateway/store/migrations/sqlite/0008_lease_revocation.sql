-- Warrant store, version 8: revoking an API key ends the leases it granted
-- (docs/decisions/0012-keys-and-roles.md). A lease remembers the stored key that granted it; a
-- revoke marks the runs whose current lease that key granted, and the admit refuses their calls
-- `lease_revoked`.

ALTER TABLE leases ADD COLUMN granted_key_id TEXT;   -- the store's key_id; NULL: a bootstrap key (or before v8)
CREATE INDEX leases_granted_key ON leases (granted_key_id) WHERE granted_key_id IS NOT NULL;
-- When the key that granted the run's current lease was revoked; NULL: it stands. A new lease clears it.
ALTER TABLE runs ADD COLUMN lease_revoked_at REAL;
