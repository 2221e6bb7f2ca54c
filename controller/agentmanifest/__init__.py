"""The hosted product's agents manifest over the API: A2A coverage.

`POST /api/a2a/coverage/assert` takes the hosted `agents.yaml` as JSON, checks it with the
model and rules of the git files (`controller.gitsources.load`), and answers whether every watch
it declares is a watch of the caller's org. `coverage` is the pure part, `service` reads the
org's watches. See docs/api.md and docs/compat.md.
"""
