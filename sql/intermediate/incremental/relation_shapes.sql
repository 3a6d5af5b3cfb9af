-- grain: one row per column of a table or view of the warehouse's main schema, in order
-- table_shape for every relation at once: a run that builds several marts fingerprints their inputs from it.
select
    c.table_name,
    c.column_name,
    c.data_type,
    c.table_name in (
        select view_name from duckdb_views()
        where database_name = current_database() and schema_name = 'main'
    ) as is_view
from information_schema.columns as c
where c.table_catalog = current_database() and c.table_schema = 'main'
order by c.table_name, c.ordinal_position
