-- The base tables that store file ids (pipelines/ingest/ledger.py follow_moves()): every landed table and
-- mart with x_file_id (and whether it also holds x_source_file, the uri it names), and the file marts'
-- state (int_incremental_files.file_id). The ledger itself is moved by move_files.sql and move_copies.sql.
select
    c.table_name,
    c.column_name,
    exists (
        select 1 from duckdb_columns() as s
        where
            s.database_name = c.database_name and s.schema_name = c.schema_name
            and s.table_name = c.table_name and s.column_name = 'x_source_file'
    ) as has_source_file
from duckdb_columns() as c
inner join duckdb_tables() as t
    on t.database_name = c.database_name and t.schema_name = c.schema_name and t.table_name = c.table_name
where
    c.database_name = current_database()
    and c.schema_name = 'main'
    and (c.column_name = 'x_file_id' or (c.table_name = 'int_incremental_files' and c.column_name = 'file_id'))
order by c.table_name
