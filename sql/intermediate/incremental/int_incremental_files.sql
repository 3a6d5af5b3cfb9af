-- grain: one row per table kept up to date by file x ingested file
-- The fingerprint of everything a file's rows were built from (pipelines/transform/files.py): a file whose
-- inputs fingerprint differently is built again, a file no longer on the bill is dropped.
create table if not exists int_incremental_files (
    object varchar not null,              -- the table: commitment_lines, transfer_lines, log_storage_lines
    file_id varchar not null,             -- the file (ingest_files.file_id)
    fingerprint ubigint not null,         -- of everything the file's rows were built from
    built_at timestamp not null,
    primary key (object, file_id)
)
