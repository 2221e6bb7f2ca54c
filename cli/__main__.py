"""`python -m cli` runs the driftgate command (used where the console script is not on PATH),
under its own name: usage lines and shell completion (`_DRIFTGATE_COMPLETE`) say `driftgate`."""

from cli.main import main

main(prog_name="driftgate")
