"""Services that run beside the gate: watchdog, webhooks, retention, cancel relay, shutdown."""
