-- grain: one row per source line item
-- depends_on: billing_columns (columns), billing_lines (rows), ingest_files (lineage), billing_tag_sets (tags)
-- columns_from: billing_columns
-- Every billing source's lines in one FOCUS 1.2 shape: the columns of `billing_columns` in their order,
-- NULL where no source filled a column (`billing_lines` does not store it), the file lineage
-- (x_source_name, x_source_format, x_source_file, x_loaded_at) from the ingestion ledger, and the tags
-- (tags, x_tags_raw, team, project, owner, job_id, x_host) from the line's set in billing_tag_sets (a
-- line written by hand with its own tag columns keeps them; lines stored so before schema version 5
-- were given sets by the upgrade to version 6).
create view if not exists billing_line_items as
select
    l.* replace (
        coalesce(t.tags, l.tags) as tags,
        coalesce(t.team, l.team) as team,
        coalesce(t.project, l.project) as project,
        coalesce(t.owner, l.owner) as owner,
        coalesce(t.job_id, l.job_id) as job_id,
        coalesce(t.x_host, l.x_host) as x_host,
        coalesce(t.x_tags_raw, l.x_tags_raw) as x_tags_raw,
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
left join billing_tag_sets as t on t.x_tag_set = l.x_tag_set
