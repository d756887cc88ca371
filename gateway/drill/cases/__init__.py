"""The drill's cases, registered on import (gateway/drill/case.py REGISTRY), in DRILL.md's order."""

from gateway.drill.cases import crash  # noqa: F401
