"""The MCP front: the streamable-HTTP server at /mcp, the worker-key route, the stdio bridge."""
