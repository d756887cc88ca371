"""The pure core: contracts, lifecycles, leases, budgets, approvals, operation ids. No I/O."""
