-- schema version 8: billing content is loaded once across the warehouse, and money keeps the provider's
-- precision. The ledger names the original of a `duplicate` file (duplicate_of: a billing file with the same
-- bytes as one already loaded, in any source, name or period).
alter table ingest_files add column duplicate_of varchar;
