-- Telemetry hosts of one source that stopped reporting or report far less than they did: a host whose newest
-- sample is more than $silence behind the source's newest (and that no inventory says was terminated), or
-- whose samples in the source's last 24 hours are under half its daily average over the week before.
-- Hosts silent for more than eight days are gone, not stale, and drop out. Every sample here passed the
-- ingest's clock check (none more than the source's max_clock_skew after the clock it was loaded at), so one
-- host dated ahead cannot move the source's newest time and drop the others out. Hours a metrics store
-- pre-aggregated (gpu_hourly_stats) count as their samples, at the hour's start.
-- The source's newest time is found first and the samples are streamed, not materialised: DuckDB
-- materialises a CTE read twice, which would hold the whole window's samples in memory.
with newest as (
    select max(t) as at from (
        select max(ts) as t from gpu_samples where source = $source
        union all
        select max(hour) from gpu_hourly_stats where source = $source
    )
),
samples as not materialized (
    select ts, host, x_sample_date as day, 1 as n from gpu_samples where source = $source
    union all
    select hour, host, x_hour_date, samples from gpu_hourly_stats where source = $source
),
per_host as (
    select
        s.host,
        max(s.ts) as last_sample,
        min(s.ts) as first_sample,
        coalesce(sum(s.n) filter (where s.ts > n.at - interval 1 day), 0) as last_day,
        coalesce(sum(s.n) filter (where s.ts <= n.at - interval 1 day), 0) as week_before,
        any_value(n.at) as source_newest
    from samples s, newest n
    where s.day >= cast(n.at - interval 8 day as date)
      and s.ts > n.at - interval 8 day
    group by s.host
),
baseline as (
    select
        *,
        -- days of the week before the last 24 hours this host was present for
        date_diff('second', greatest(first_sample, source_newest - interval 8 day),
                  source_newest - interval 1 day) / 86400.0 as days_before
    from per_host
),
terminated as (
    select host, max(terminated_at) as terminated_at
    from inventory_hosts
    where terminated_at is not null
    group by host
)
select
    b.host,
    b.last_sample,
    b.source_newest,
    b.last_day as samples_last_day,
    case when b.days_before >= 1 then b.week_before / b.days_before end as samples_per_day_before,
    case when b.last_sample < b.source_newest - $silence then 'silent' else 'sparse' end as problem
from baseline b
left join terminated t on t.host = b.host
where (t.terminated_at is null or t.terminated_at > b.last_sample + $silence)
  and (
      b.last_sample < b.source_newest - $silence
      or (b.days_before >= 1 and b.last_day < 0.5 * b.week_before / b.days_before)
  )
order by b.last_sample, b.host
