-- question: Which input files were rejected by ingestion, and why?
-- grain: one row per file the ledger currently holds as rejected (any week)
-- depends_on: ingest_files
select
    source,
    kind,
    uri,
    error,
    checked_at
from ingest_files
where status = 'rejected'
order by checked_at desc, uri
