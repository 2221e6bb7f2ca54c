"""Git sources: the `.driftgate/` files (`load`, pure), the reconcile engine that applies
them (`reconcile`), their JSON Schema (`configschema`) and the sources' use cases (`service`)."""
