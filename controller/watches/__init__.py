"""Watches: their use cases (`service`, watch sets, watch types, the contract view) and the
driftStatus moves (`status`, pure)."""
