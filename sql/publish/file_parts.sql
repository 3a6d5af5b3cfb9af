-- grain: one row per file with rows in the table
-- depends_on: ingest_files
-- The parts a published landed table is updated by (pipelines/warehouse.py, publish): each file's rows, with
-- what changes whenever the ingest writes them again (the row count and the ledger's uri, checksum and load
-- time), read from the warehouse. $table is the table's name.
select
    cast(f.x_file_id as varchar) as part,
    hash(concat_ws('|', f.n, i.uri, i.checksum, i.loaded_at)) as token
from (select x_file_id, count(*) as n from query_table($table) group by all) as f
left join ingest_files as i on i.file_id = f.x_file_id
