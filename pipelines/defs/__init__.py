"""Dagster definitions, autoloaded by `pipelines.definitions`."""
