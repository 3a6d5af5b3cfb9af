"""`wastewatch demo` (pipelines.demo): the planted waste is found by the real pipeline."""
