"""`wastewatch estimate` (pipelines.estimate)."""
