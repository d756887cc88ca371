"""The rules for names the gateway exposes: adapters, and tools as `<adapter>__<tool>`.

Kept apart from the catalog so that tools which only check names (the OpenAPI importer, the
CLI) need not import the policy engine to do it.
"""

from __future__ import annotations

import re

ADAPTER_NAME = re.compile(r"^[a-z][a-z0-9]{0,15}$")
EXPOSED_NAME = re.compile(r"^[A-Za-z0-9_-]{1,48}$")
RESERVED_PREFIX = "warrant_"
