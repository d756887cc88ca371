"""The operator HTTP API under /api: JSON in, JSON out, errors as {"error": {code, message, ...}}."""
