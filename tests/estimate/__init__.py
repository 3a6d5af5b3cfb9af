"""`wastewatch estimate` (pipelines.advice.estimate)."""
