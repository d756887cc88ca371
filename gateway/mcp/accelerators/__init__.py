"""Fast paths that mirror the MCP SDK, each behind a tested SDK version range and a switch."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.mcp.accelerators.fastpath import FastPath
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "FastPath",
]
