-- The ledger row of one snapshot a whole-source reader loaded (an inventory manifest): always `loaded`,
-- with the snapshot's size, modification time, ETag, checksum and rows (pipelines/ingest/ledger.py).
-- params: $id $source $kind $uri $size $mtime $etag $checksum $rows $now
insert into ingest_files (file_id, source, kind, uri, size_bytes, modified_at, etag, checksum,
                          billing_period, rows, billed_cost_sum, effective_cost_sum, status, error,
                          first_seen_at, checked_at, loaded_at)
values ($id, $source, $kind, $uri, $size, $mtime, $etag, $checksum, null, $rows, null, null,
        'loaded', null, $now, $now, $now)
on conflict (file_id) do update set
    uri = excluded.uri, size_bytes = excluded.size_bytes, modified_at = excluded.modified_at, etag = excluded.etag,
    checksum = excluded.checksum, rows = excluded.rows, status = 'loaded', error = null,
    checked_at = excluded.checked_at, loaded_at = excluded.loaded_at;
