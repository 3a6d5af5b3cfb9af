-- grain: one row per source file (the ingestion ledger)
-- Decides what is new: a file whose size and checksum/etag are unchanged is not read again.
-- Status values: loaded | rejected | superseded (an older version of a billing period) | removed (gone from the
-- source; its rows deleted) | duplicate (a billing file with the same bytes as one the warehouse holds, in any
-- source, name or period: never loaded; duplicate_of names the original)
create table if not exists ingest_files (
    file_id varchar primary key,          -- sha1(source | key); key: a local file's path relative to the
                                          -- source's root, an S3 object's uri, `source:` for a source read whole
    source varchar not null,              -- the source's name in wastewatch.yaml
    kind varchar not null,                -- reader kind (focus, nvidia_smi, ...)
    uri varchar not null,                 -- where the file is now: absolute path or s3://bucket/key
    size_bytes bigint,
    modified_at timestamp,
    etag varchar,                         -- S3 ETag (quotes stripped) when read from S3
    checksum varchar,                     -- sha256 of the bytes read
    billing_period varchar,               -- YYYY-MM for billing files when known
    rows bigint,                          -- rows landed from this file
    billed_cost_sum decimal(38, 12),      -- reconciliation: sums of what landed (billing files)
    effective_cost_sum decimal(38, 12),
    status varchar not null,              -- loaded | rejected | superseded | removed | duplicate
    error varchar,                        -- for rejected files: file, line/column and the problem
    first_seen_at timestamp not null,
    checked_at timestamp not null,        -- last time a run looked at this version of the file
    loaded_at timestamp,                  -- last successful load
    delivery_id varchar,                  -- billing: the manifest version (assemblyId, executionId, run) it came with
    file_rows bigint,                     -- reconciliation: rows in the file, counted from the file itself
    file_billed_cost_sum decimal(38, 12),  -- ... and its billed / effective cost, from its own columns
    file_effective_cost_sum decimal(38, 12),
    currencies varchar,                   -- billing currencies of the file's lines, comma-separated
    duplicate_of varchar                  -- for duplicate files: the uri of the loaded file with the same bytes
);
