"""The gateway's own `warrant_*` tools: progress, evidence."""
