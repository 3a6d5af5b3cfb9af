-- grain: one row
-- depends_on: ingest_files, gpu_samples_pruned
-- What the landed tables hold, as sums of row hashes: every ledger row as loaded, with where its file is
-- now (a moved file's rows name it in x_source_file), but not the time a run last looked at it, nor a
-- retried file's error; and every day the retention dropped. Only ingestion and the retention write the
-- landed tables, so equal parts mean equal landed rows.
select
    (select count(*) from ingest_files) as files,
    (
        select coalesce(sum(hash(
            file_id, uri, status, size_bytes, modified_at, etag, checksum, rows, loaded_at, delivery_id, duplicate_of
        )::hugeint), 0)
        from ingest_files
    ) as files_hash,
    (select count(*) from gpu_samples_pruned) as pruned_days,
    (select coalesce(sum(hash(day, samples, pruned_at)::hugeint), 0) from gpu_samples_pruned) as pruned_hash
