"""Metrics and traces: what the gate counts and how its work shows in OpenTelemetry."""
