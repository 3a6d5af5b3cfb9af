-- grain: one row per table or view of the database $db
-- What publishing compares between the warehouse and the readers' copy (pipelines/warehouse.py): each
-- relation's kind, SQL (views), comment, estimated rows, and columns with their types and comments.
select
    t.table_name as name,
    false as is_view,
    null as sql,
    t.comment,
    t.estimated_size as estimated_rows,
    (
        select string_agg(concat_ws(' ', c.column_name, c.data_type), ', ' order by c.column_index)
        from duckdb_columns() as c
        where c.database_name = t.database_name and c.schema_name = t.schema_name and c.table_name = t.table_name
    ) as shape,
    (
        select list({'column': c.column_name, 'comment': c.comment} order by c.column_index)
        from duckdb_columns() as c
        where c.database_name = t.database_name and c.schema_name = t.schema_name and c.table_name = t.table_name
            and c.comment is not null
    ) as column_comments
from duckdb_tables() as t
where t.database_name = $db and t.schema_name = 'main' and not t.temporary
union all
select
    v.view_name,
    true,
    v.sql,
    v.comment,
    null,
    (
        select string_agg(concat_ws(' ', c.column_name, c.data_type), ', ' order by c.column_index)
        from duckdb_columns() as c
        where c.database_name = v.database_name and c.schema_name = v.schema_name and c.table_name = v.view_name
    ),
    (
        select list({'column': c.column_name, 'comment': c.comment} order by c.column_index)
        from duckdb_columns() as c
        where c.database_name = v.database_name and c.schema_name = v.schema_name and c.table_name = v.view_name
            and c.comment is not null
    )
from duckdb_views() as v
where v.database_name = $db and v.schema_name = 'main' and not v.internal and not v.temporary
order by name
