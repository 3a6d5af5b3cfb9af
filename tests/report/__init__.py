"""The weekly report (pipelines.report): figures, files, browser rendering, delivery, lifecycle, questions."""
