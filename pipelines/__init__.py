"""wastewatch: the Dagster code location, the CLI and the ingestion/transform/report machinery."""
