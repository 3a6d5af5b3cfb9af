-- grain: one row per source line item
-- depends_on: billing_columns (the column list), billing_lines (the rows), ingest_files (lineage)
-- columns_from: billing_columns
-- Every billing source's lines in one FOCUS 1.2 shape: the columns of `billing_columns` in their order,
-- NULL where no source filled a column (`billing_lines` does not store it), and the file lineage
-- (x_source_name, x_source_format, x_source_file, x_loaded_at) from the ingestion ledger.
create view if not exists billing_line_items as
select
    l.* replace (
        f.source as x_source_name,
        f.kind as x_source_format,
        f.uri as x_source_file,
        f.loaded_at as x_loaded_at
    )
from (
    from billing_columns
    union all by name
    select *, rowid as x_line_key from billing_lines
) as l
left join ingest_files as f on f.file_id = l.x_file_id
