"""Ingestion (pipelines.ingest): the readers of each source family, the ledger, restatements, bad inputs."""
