-- grain: one row per calendar month (UTC) a stored billing line's charge period reaches
-- depends_on: billing_lines, billing_columns, billing_tag_sets, ingest_files
-- What cost_hourly's billed rows of the month's hours are built from. A line's share of an hour depends on
-- the lines of its resource within its charge period (the hours it appears on the bill), so the month's
-- rows are spread from every line whose period overlaps its reach: reach_from to reach_to, the month and
-- the hours from the earliest start to the latest end of the lines in the month (per file, tag set and start month, the
-- longer lines also per pair of start and end months, so it may cover more, never less), widened to whole
-- hours. A line's period is the span cost_hourly spreads it over (spread_start, spread_end: a line longer
-- than 31 days reaches its billing period, not its term). A line longer
-- than a day whose resource shows in no line of a day or less (a commitment bought for years, a credit
-- without a resource) is spread over its own period whatever else the bill holds: it is read by the months
-- it overlaps and widens no reach, so it does not tie them together. The fingerprint covers the files
-- with a line in the reach (a lone line: in the month): the file's id, row count and tag sets (their
-- canonical tags), and the ledger's source, kind, uri, checksum and load time. A line of no length counts
-- as reaching the hour it starts in (cost_hourly gives it that hour). billing_lines stores x_tag_set and
-- resource_id once a reader filled them: billing_columns (no rows) gives the columns.
with lines as not materialized (
    select
        x_file_id,
        x_tag_set,
        resource_id,
        span_start as line_start,
        greatest(span_end, span_start + interval 1 microsecond) as line_end,
        epoch(span_end) - epoch(span_start) as seconds
    from (
        select
            *,
            spread_start(charge_period_start, charge_period_end, billing_period_start, x_billing_period)
                as span_start,
            spread_end(
                charge_period_start, charge_period_end, billing_period_start, billing_period_end, x_billing_period
            ) as span_end
        from (
            select
                x_file_id, x_tag_set, resource_id, charge_period_start, charge_period_end, billing_period_start,
                billing_period_end, x_billing_period
            from billing_columns
            union all by name
            from billing_lines
        )
    )
),

-- the resources of lines longer than a day that also show in a line of a day or less (cost_hourly's
-- `presence`): such a long line is spread over those hours, wherever in its period they lie
-- ($lines: billing_lines, or billing_columns while no reader has stored a resource_id, so none is tied;
-- read directly, as DuckDB plans the correlated test over the union above far slower)
tied as (
    select distinct g.resource_id
    from query_table($lines) as g
    where
        epoch(g.charge_period_end) - epoch(g.charge_period_start) > 86400
        and exists (
            select 1
            from query_table($lines) as s
            where
                s.resource_id = g.resource_id
                and epoch(s.charge_period_end) > epoch(s.charge_period_start)
                and epoch(s.charge_period_end) - epoch(s.charge_period_start) <= 86400
        )
),

-- per file, tag set and the month a line starts in the extent of the lines of a day or less (never lone:
-- by month, so that a late correction months back does not tie every month between to its file), and per
-- file, tag set, lone or not, and the months a line starts and ends in, that of the longer ones
groups as (
    select
        *,
        date_trunc('month', first_start) as first_month,
        date_trunc('month', last_end - interval 1 microsecond) as last_month
    from (
        select
            x_file_id,
            x_tag_set,
            false as alone,
            min(line_start) as first_start,
            max(line_end) as last_end,
            count(*) as n
        from lines
        where seconds <= 86400
        group by x_file_id, x_tag_set, date_trunc('month', line_start)
        union all
        select
            l.x_file_id,
            l.x_tag_set,
            t.resource_id is null as alone,
            min(l.line_start) as first_start,
            max(l.line_end) as last_end,
            count(*) as n
        from lines as l
        left join tied as t on t.resource_id = l.resource_id
        where l.seconds > 86400
        group by l.x_file_id, l.x_tag_set, alone, date_trunc('month', l.line_start), date_trunc('month', l.line_end)
    )
),

-- per file its lines and tag sets, counted per distinct set so that how its lines fall into groups (which
-- changes when a long line's resource first shows in a shorter one) does not change the file's fingerprint
file_sets as (
    select
        x_file_id,
        x_tag_set,
        sum(n) as n
    from groups
    group by all
),

files as (
    select
        s.x_file_id,
        sum(s.n) as n,
        sum(hash(concat_ws('|', s.x_tag_set, cast(t as varchar)))) as tag_sets
    from file_sets as s
    left join billing_tag_sets as t on t.x_tag_set = s.x_tag_set
    group by s.x_file_id
),

months as (
    select distinct unnest(range(first_month, last_month + interval 1 month, interval 1 month)) as month
    from groups
),

reach as (
    select
        m.month,
        date_trunc('hour', least(m.month, min(g.first_start))) as reach_from,
        date_trunc('hour', greatest(m.month + interval 1 month, max(g.last_end)) - interval 1 microsecond)
        + interval 1 hour as reach_to
    from months as m
    left join groups as g on not g.alone and g.first_month <= m.month and g.last_month >= m.month
    group by m.month
),

reached as (
    select distinct
        r.month,
        r.reach_from,
        r.reach_to,
        g.x_file_id
    from reach as r
    inner join groups as g
        on
            case
                when g.alone then g.first_month <= r.month and g.last_month >= r.month
                else g.first_start < r.reach_to and g.last_end > r.reach_from
            end
)

select
    r.month::date as month,
    r.reach_from,
    r.reach_to,
    sum(hash(concat_ws('|', f.x_file_id, f.n, f.tag_sets, i.source, i.kind, i.uri, i.checksum, i.loaded_at)))
        as fingerprint
from reached as r
inner join files as f on f.x_file_id = r.x_file_id
left join ingest_files as i on i.file_id = f.x_file_id
group by all
order by month
