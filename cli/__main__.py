"""`python -m cli` runs the driftgate command (used where the console script is not on PATH)."""

from cli.main import main

main()
