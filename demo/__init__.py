"""`driftgate demo`: a vendor simulator (OpenAPI and MCP), a webhook receiver and driftgate on
loopback, scripted to show drift end to end. A shell like `cli`: it uses the controller's
services and runs driftgate as a child process; nothing under `controller/` imports it."""
