-- The ledger rows of files after their ingestion outcomes, one statement for them all (pipelines/ingest/
-- ledger.py record_many(); record() is a batch of one). A NULL in a new outcome keeps what the row held (the
-- rows, sums and period of a load a later check did not repeat); status, error, duplicate_of, the uri (where
-- the file is now) and the file's fingerprint are always the new ones.
-- params: $source $kind $now (the batch's); lists, one element a file: $id $uri $size $mtime $etag $checksum
--         $period $rows $billed $effective $status $error $delivery $file_rows $file_billed
--         $file_effective $currencies $duplicate_of (sums as text, so no list type rounds them)
insert into ingest_files (
    file_id, source, kind, uri, size_bytes, modified_at, etag, checksum, billing_period, rows,
    billed_cost_sum, effective_cost_sum, status, error, first_seen_at, checked_at, loaded_at,
    delivery_id, file_rows, file_billed_cost_sum, file_effective_cost_sum, currencies, duplicate_of
)
select
    id, $source, $kind, uri, size, mtime, etag, checksum, period, rows,
    billed::decimal(38, 12), effective::decimal(38, 12),
    status, error, $now, $now, case when status = 'loaded' then $now::timestamp end,
    delivery, file_rows, file_billed::decimal(38, 12), file_effective::decimal(38, 12), currencies, duplicate_of
from (
    select
        unnest($id::varchar[]) as id,
        unnest($uri::varchar[]) as uri,
        unnest($size::bigint[]) as size,
        unnest($mtime::timestamp[]) as mtime,
        unnest($etag::varchar[]) as etag,
        unnest($checksum::varchar[]) as checksum,
        unnest($period::varchar[]) as period,
        unnest($rows::bigint[]) as rows,
        unnest($billed::varchar[]) as billed,
        unnest($effective::varchar[]) as effective,
        unnest($status::varchar[]) as status,
        unnest($error::varchar[]) as error,
        unnest($delivery::varchar[]) as delivery,
        unnest($file_rows::bigint[]) as file_rows,
        unnest($file_billed::varchar[]) as file_billed,
        unnest($file_effective::varchar[]) as file_effective,
        unnest($currencies::varchar[]) as currencies,
        unnest($duplicate_of::varchar[]) as duplicate_of
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
