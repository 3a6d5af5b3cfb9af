"""The Dagster code location (pipelines.definitions, pipelines.defs) and real runs of it."""
