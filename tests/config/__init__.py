"""`wastewatch.yaml` (pipelines.config)."""
