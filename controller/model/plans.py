"""The plans an org can be on and the overlay products a paid plan can enable: names only, in
order (a later plan is a higher one), so that the CLI offers them as choices without loading
the store."""

from __future__ import annotations

PLANS = ("free", "pro", "team", "enterprise")
PRODUCTS = ("replay_cloud", "draftpr_repo", "toolmanifest_org")
