"""Identifiers: a readable prefix and 96 random bits, e.g. `run_5k2q...`."""

from __future__ import annotations

import base64
import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_" + base64.b32encode(secrets.token_bytes(15)).decode("ascii").lower()
