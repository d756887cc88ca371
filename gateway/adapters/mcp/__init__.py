"""`kind: mcp` adapters: a downstream MCP server over stdio or streamable HTTP."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.adapters.mcp.adapter import McpAdapter, McpAdapterConfig
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "McpAdapter",
    "McpAdapterConfig",
]
