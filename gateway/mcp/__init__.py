"""The MCP front: the streamable-HTTP server at /mcp, the worker-key route, the stdio bridge."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.mcp.runs import WorkerKeyRoute
    from gateway.mcp.server import (
        WARRANT_TOOLS,
        LeaseTokenGuard,
        build_mcp_server,
        fast_path,
        mcp_app,
        result_body,
        running,
        to_mcp_result,
    )
    from gateway.mcp.stdio_bridge import run_bridge
    from gateway.mcp.stdio_lease import BridgeLease
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "WARRANT_TOOLS",
    "BridgeLease",
    "LeaseTokenGuard",
    "WorkerKeyRoute",
    "build_mcp_server",
    "fast_path",
    "mcp_app",
    "result_body",
    "run_bridge",
    "running",
    "to_mcp_result",
]
