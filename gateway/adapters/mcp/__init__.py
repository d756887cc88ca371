"""`kind: mcp` adapters: a downstream MCP server over stdio or streamable HTTP."""
