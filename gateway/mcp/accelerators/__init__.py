"""Fast paths that mirror the MCP SDK, each behind a tested SDK version range and a switch.

The front's is fastpath.py. The fence (the ranges, the switches, the private names) is
gateway/accelerators.py, at the package root, so that the adapters' lean client
(gateway/adapters/mcp/lean_client.py) and the catalog's quick check share it.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.mcp.accelerators.fastpath import FastPath
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "FastPath",
]
