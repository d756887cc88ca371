"""Fast paths that mirror the MCP SDK, each behind a tested SDK version range and a switch."""
