-- grain: one row
-- depends_on: ingest_files
-- The fingerprint of a landed table's rows by the files they came from: each file's id and how many rows it
-- has in the table, with the ledger's uri, checksum and load time, so a file loaded again, moved, cut down
-- by a retention or replaced by a newer delivery changes it. Rows are summed, not xor-ed: two files with
-- the same figures do not cancel out.
with files as (
    select
        x_file_id,
        count(*) as n
    from query_table($table)
    group by all
)

select coalesce(sum(hash(cast(row(f.x_file_id, f.n, i.uri, i.checksum, i.loaded_at) as varchar))), 0) as fingerprint
from files as f
left join ingest_files as i on f.x_file_id = i.file_id
