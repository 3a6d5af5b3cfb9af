"""The `wastewatch` command line (pipelines.cli)."""
