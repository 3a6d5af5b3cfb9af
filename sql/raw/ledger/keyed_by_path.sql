-- The ledger rows of one source that a wastewatch before schema version 19 keyed by absolute location
-- (pipelines/ingest/ledger.py follow_moves()): file_id = sha1(source | uri) for a file, and
-- sha1(source | 'source:' uri) for a source read whole (`whole`). S3 and API keys are their uris, as before.
-- params: $source
select
    file_id,
    uri,
    left(sha1(source || '|source:' || uri), 20) = file_id as whole
from ingest_files
where
    source = $source
    and not starts_with(uri, 's3://')
    and not regexp_matches(uri, '^https?://')
    and (
        left(sha1(source || '|' || uri), 20) = file_id
        or left(sha1(source || '|source:' || uri), 20) = file_id
    )
