-- grain: one row per log group in the newest listing of each source
-- depends_on: log_groups
-- Each log group's retention setting and stored bytes as the newest listing of its source saw them, with the
-- growth of its stored bytes since an earlier listing (the one nearest a week before, at least a day older),
-- which, for a group that never expires, is the bytes it ingests a day in stored (compressed) bytes.
-- age_days: days from the group's creation to the newest listing
-- prev_listed_at, prev_stored_bytes: the earlier listing growth is measured against (NULL: none)
-- growth_bytes_per_day: (stored_bytes - prev_stored_bytes) / days between the two listings
with listed as (
    -- one row per group and listing time (two saved files of the same moment count once)
    select *, coalesce(log_group_arn, log_group) as group_key
    from log_groups
    qualify row_number() over (
        partition by source, coalesce(log_group_arn, log_group), listed_at order by x_source_file desc
    ) = 1
),

newest as (
    select source, max(listed_at) as listed_at
    from listed
    group by source
),

current_groups as (
    select l.*
    from listed as l
    inner join newest as n on n.source = l.source and n.listed_at = l.listed_at
),

earlier as (
    select
        c.source,
        c.group_key,
        p.listed_at as prev_listed_at,
        p.stored_bytes as prev_stored_bytes
    from current_groups as c
    inner join listed as p
        on p.source = c.source and p.group_key = c.group_key
        and p.listed_at <= c.listed_at - interval 1 day
        and p.stored_bytes is not null
    qualify row_number() over (
        partition by c.source, c.group_key
        order by abs(epoch(c.listed_at - p.listed_at) - 7 * 86400), p.listed_at desc
    ) = 1
)

select
    c.provider,
    c.account_id,
    c.region_id,
    c.log_group,
    c.log_group_arn,
    c.retention_in_days,
    c.stored_bytes,
    c.log_group_class,
    c.created_at,
    c.listed_at,
    epoch(c.listed_at - c.created_at) / 86400 as age_days,
    e.prev_listed_at,
    e.prev_stored_bytes,
    (c.stored_bytes - e.prev_stored_bytes) / (epoch(c.listed_at - e.prev_listed_at) / 86400)
        as growth_bytes_per_day,
    c.source,
    c.x_source_file
from current_groups as c
left join earlier as e on e.source = c.source and e.group_key = c.group_key
