"""Diff runs: two OpenAPI documents sent to the API, diffed by the engine behind `driftgate
diff`, and kept so that the link the answer carries opens the result in the console."""
