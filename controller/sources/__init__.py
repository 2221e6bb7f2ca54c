"""I/O adapters: HTTP fetchers (and later git and MCP clients)."""
