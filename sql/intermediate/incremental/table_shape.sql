-- grain: one row per column of a table or view, in order
-- Its columns, so a table that gained one (a billing column a new export brought) fingerprints differently.
select
    column_name,
    data_type,
    exists (
        select 1 from duckdb_views()
        where database_name = current_database() and schema_name = 'main' and view_name = $table
    ) as is_view
from information_schema.columns
where table_catalog = current_database() and table_schema = 'main' and table_name = $table
order by ordinal_position
