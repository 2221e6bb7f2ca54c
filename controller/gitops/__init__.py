"""The `.driftgate/` directory of a repository: its files, read and checked without I/O."""

from controller.gitops.load import FILES, Bundle, Problem, load_bundle

__all__ = ["FILES", "Bundle", "Problem", "load_bundle"]
