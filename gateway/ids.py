"""Identifiers: a readable prefix, 48 bits of time, 48 random bits: `act_0193a5c2e1f04b7c9d2e3f1a`.

Time first, so that ids made one after another land next to each other in the store's indexes
(one page touched per insert instead of a random one). Ids name things; they are not secrets
(lease tokens and API keys are made elsewhere, from 256 random bits).
"""

from __future__ import annotations

import os
import time


def new_id(prefix: str) -> str:
    return f"{prefix}_{time.time_ns() // 1_000_000:012x}{os.urandom(6).hex()}"
