-- grain: one row
-- Whether the layer's objects were created from the SQL that digests as $digest and all of $names exist.
select
    coalesce((select digest = $digest from int_layer_digest where layer = $layer), false)
    and (
        select count(*) from duckdb_tables()
        where database_name = current_database() and schema_name = 'main' and list_contains($names, table_name)
    ) + (
        select count(*) from duckdb_views()
        where database_name = current_database() and schema_name = 'main' and not internal
            and list_contains($names, view_name)
    ) = len($names) as current
