"""The fuse: payload snapshots an agent sends, checked against the watched contract."""
