-- grain: one row per calendar month (UTC) a stored billing line's charge period reaches
-- depends_on: billing_lines, billing_columns, billing_tag_sets, ingest_files
-- What cost_hourly's billed rows of the month's hours are built from. A line's share of an hour depends on
-- the lines of its resource within its charge period (the hours it appears on the bill), so the month's
-- rows are spread from every line whose period overlaps its reach: reach_from to reach_to, the hours from
-- the earliest start to the latest end of the files with a line in the month. The fingerprint covers the
-- files with a line in the reach (by each file's extent, so it may cover more, never less): the file's
-- id, row count and tag sets (their canonical tags), and the ledger's source, kind, uri, checksum and load
-- time. A line of no length counts as reaching the hour it starts in (cost_hourly gives it that hour).
-- billing_lines stores x_tag_set once a reader filled it: billing_columns (no rows) gives the column.
with file_sets as (
    select
        x_file_id,
        x_tag_set,
        min(charge_period_start) as first_start,
        max(greatest(charge_period_end, charge_period_start + interval 1 microsecond)) as last_end,
        count(*) as n
    from (
        select x_file_id, x_tag_set, charge_period_start, charge_period_end from billing_columns
        union all by name
        from billing_lines
    )
    group by all
),

files as (
    select
        s.x_file_id,
        min(s.first_start) as first_start,
        max(s.last_end) as last_end,
        sum(s.n) as n,
        sum(hash(concat_ws('|', s.x_tag_set, cast(t as varchar)))) as tag_sets
    from file_sets as s
    left join billing_tag_sets as t on t.x_tag_set = s.x_tag_set
    group by s.x_file_id
),

months as (
    select distinct unnest(range(date_trunc('month', first_start), last_end, interval 1 month)) as month
    from files
),

reach as (
    select
        m.month,
        date_trunc('hour', min(f.first_start)) as reach_from,
        date_trunc('hour', max(f.last_end) - interval 1 microsecond) + interval 1 hour as reach_to
    from months as m
    inner join files as f on f.first_start < m.month + interval 1 month and f.last_end > m.month
    group by m.month
)

select
    r.month::date as month,
    r.reach_from,
    r.reach_to,
    sum(hash(concat_ws('|', f.x_file_id, f.n, f.tag_sets, i.source, i.kind, i.uri, i.checksum, i.loaded_at)))
        as fingerprint
from reach as r
inner join files as f on f.first_start < r.reach_to and f.last_end > r.reach_from
left join ingest_files as i on i.file_id = f.x_file_id
group by all
order by month
