"""Retention: the hourly prune of what outlived its keeping (checks, events, deliveries,
console sessions ...), each capability's rows by its own rule (`service.py`). A package of
its own, above the capabilities it prunes for."""
