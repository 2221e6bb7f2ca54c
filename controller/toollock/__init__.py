"""Pinned tool sets: the tools of MCP servers locked in git (`.driftgate/mcp.lock`), checked
offline in CI (`driftgate mcp verify`) and by the watches of those servers (issue 45)."""
