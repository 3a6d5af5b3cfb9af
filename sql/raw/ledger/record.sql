-- The ledger row of one file after an ingestion outcome (pipelines/ingest/ledger.py record()).
-- A NULL in a new outcome keeps what the row held (the rows, sums and period of a load a later check
-- did not repeat); status, error, duplicate_of, the uri (where the file is now) and the file's fingerprint
-- are always the new ones.
-- params: $id $source $kind $uri $size $mtime $etag $checksum $period $rows $billed $effective $status
--         $error $now $delivery $file_rows $file_billed $file_effective $currencies $duplicate_of
insert into ingest_files (
    file_id, source, kind, uri, size_bytes, modified_at, etag, checksum, billing_period, rows,
    billed_cost_sum, effective_cost_sum, status, error, first_seen_at, checked_at, loaded_at,
    delivery_id, file_rows, file_billed_cost_sum, file_effective_cost_sum, currencies, duplicate_of
) values (
    $id, $source, $kind, $uri, $size, $mtime, $etag, $checksum, $period, $rows, $billed, $effective,
    $status, $error, $now, $now, case when $status = 'loaded' then $now end,
    $delivery, $file_rows, $file_billed, $file_effective, $currencies, $duplicate_of
)
on conflict (file_id) do update set
    kind = excluded.kind, uri = excluded.uri, size_bytes = excluded.size_bytes, modified_at = excluded.modified_at,
    etag = excluded.etag,
    checksum = coalesce(excluded.checksum, ingest_files.checksum), status = excluded.status,
    error = excluded.error, checked_at = excluded.checked_at,
    billing_period = coalesce(excluded.billing_period, ingest_files.billing_period),
    rows = coalesce(excluded.rows, ingest_files.rows),
    billed_cost_sum = coalesce(excluded.billed_cost_sum, ingest_files.billed_cost_sum),
    effective_cost_sum = coalesce(excluded.effective_cost_sum, ingest_files.effective_cost_sum),
    loaded_at = coalesce(excluded.loaded_at, ingest_files.loaded_at),
    delivery_id = coalesce(excluded.delivery_id, ingest_files.delivery_id),
    file_rows = coalesce(excluded.file_rows, ingest_files.file_rows),
    file_billed_cost_sum = coalesce(excluded.file_billed_cost_sum, ingest_files.file_billed_cost_sum),
    file_effective_cost_sum = coalesce(excluded.file_effective_cost_sum, ingest_files.file_effective_cost_sum),
    currencies = coalesce(excluded.currencies, ingest_files.currencies),
    duplicate_of = excluded.duplicate_of;
