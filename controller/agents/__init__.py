"""Agents: their use cases (`service`, templates), their policies and actions (pure) and the
runtime that applies a policy's effect when a watch drifts."""
