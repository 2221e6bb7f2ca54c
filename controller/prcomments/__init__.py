"""One comment per pull request that driftgate keeps up to date (the GitHub Action's diff)."""
