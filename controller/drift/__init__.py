"""Drift on a watch: incidents and their moves, baselines, acknowledgements, explanations
and the drift history export."""
