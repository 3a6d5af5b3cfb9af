-- grain: one row per ingested file with a stored billing line
-- depends_on: billing_lines, billing_columns, billing_tag_sets, ingest_files
-- What the bill's line marts build from a file (each of their rows is one line's): how many lines it has
-- per tag set, each tag set's tags and canonical tags, and the ledger's source, kind, uri, checksum and
-- load time, so a file delivered again, loaded again or retagged fingerprints differently. Summed, not
-- xor-ed: two tag sets with the same figures do not cancel out. billing_lines stores x_tag_set once a
-- reader filled it: billing_columns (no rows) gives the column.
with sets as (
    select
        x_file_id,
        x_tag_set,
        count(*) as n
    from (
        select x_file_id, x_tag_set from billing_columns
        union all by name
        from billing_lines
    )
    group by all
),

files as (
    select
        s.x_file_id,
        sum(s.n) as n,
        sum(hash(concat_ws('|', s.x_tag_set, s.n, cast(t as varchar)))) as tag_sets
    from sets as s
    left join billing_tag_sets as t on t.x_tag_set = s.x_tag_set
    group by s.x_file_id
)

select
    f.x_file_id as file_id,
    hash(concat_ws('|', f.x_file_id, f.n, f.tag_sets, i.source, i.kind, i.uri, i.checksum, i.loaded_at))
        as fingerprint
from files as f
left join ingest_files as i on i.file_id = f.x_file_id
order by file_id
