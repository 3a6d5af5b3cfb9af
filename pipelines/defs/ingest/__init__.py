"""ingest assets."""
