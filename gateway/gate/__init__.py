"""The gate: one tools/call from the lease token to the settled outcome, and what it needs
at run time (limits, held leases, reconciliation)."""
