-- The billing file the warehouse holds with these bytes (pipelines/ingest/ledger.py live_copy()): loaded,
-- with lines, the same size and sha256, in any billing source, name or period, and not among the files the
-- caller's load replaces. The earliest loaded is the original a copy names.
-- params: $checksum $size $replaced $kinds
select file_id, source, uri, checksum
from ingest_files
where
    status = 'loaded'
    and coalesce(rows, 0) > 0
    and size_bytes = $size
    and checksum = $checksum
    and list_contains($kinds, kind)
    and not list_contains($replaced, file_id)
order by loaded_at, uri
limit 1
