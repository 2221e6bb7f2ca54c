"""The hosted product's names for driftgate's services, for its open-source clients.

The clients of the hosted product that SPEC.md describes (`fuseguard`, `mockdrift`, the
TypeScript CLI and MCP server) call routes, send headers and read answer shapes of their own.
This capability maps them onto driftgate's services and never implements anything twice: the
specification's routes and shapes stay primary, and each alias is published in `/openapi.json`
with `x-driftgate-compat`. See docs/compat.md for the map of every client operation.
"""
