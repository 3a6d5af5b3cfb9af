"""Ingestion modes, one module each, picked by the reader's base class (pipelines/ingest/readers/base.py):
`per_file` (FileReader), `batched` (BatchReader), `deliveries` (DeliveryReader: billing), `whole_source`
(SourceReader). Every mode asks the ledger what is new and records each outcome there."""
