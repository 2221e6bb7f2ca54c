"""The `driftgate` commands, one module per group (`cli/main.py` lists them)."""
