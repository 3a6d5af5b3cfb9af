-- grain: one row per measure of the week: concurrent GPUs, hourly spend per billing currency, stored GiB (a
--   measure without data in the week has no row)
-- depends_on: gpu_hours, cost_hourly, storage_prefix_days
-- params: $window_start, $window_end, $idle_util_pct, $min_coverage
-- The week's peaks beside its averages (a budget built on the average misses the start-up peak, the
-- checkpoint-write storage peak). Each is averaged over the periods its data spans in the week (first to last
-- hour, or day, with data; a period inside the span without any counts as 0), and peak_at is the first
-- period the peak was reached in.
-- concurrent_gpus: per hour, the distinct physical GPUs (MIG instances of one GPU count once) that were busy
-- (telemetry for at least $min_coverage of the hour and mean util above $idle_util_pct, GPU001's idle bound)
-- or allocated (a job ran on them in the hour)
-- hourly_spend: per hour and billing currency, the effective cost cost_hourly puts in the hour (a daily or
-- monthly line is spread evenly over its hours, so it adds no peak of its own)
-- stored_gib: per day, the GiB of every bucket and file-system root as of its latest listing on or before
-- the day (storage_prefix_days, every storage class and version)
-- measure: concurrent_gpus | hourly_spend | stored_gib
-- currency: the billing currency (hourly_spend only)
-- average: the mean over the periods of the span
-- peak: the highest period's value
-- peak_at: UTC start of the first hour (or the first day) the peak was reached
-- per: hour | day
-- periods: hours (or days) the average is taken over
with gpu_span as (
    select
        min(hour) as first_hour,
        max(hour) as last_hour
    from gpu_hours
    where hour >= $window_start and hour < $window_end
),

gpus_in_use as (
    select
        hour,
        count(distinct split_part(gpu_id, '/mig', 1)) as value
    from gpu_hours
    where hour >= $window_start and hour < $window_end
        and (
            (coverage >= $min_coverage and util_mean > $idle_util_pct)
            or coalesce(jobs, 0) > 0
            or job_id is not null
        )
    group by hour
),

gpu_hours_of_span as (
    select
        'concurrent_gpus' as measure,
        null::varchar as currency,
        t.hour,
        coalesce(g.value, 0)::double as value
    from gpu_span as s, range(s.first_hour, s.last_hour + interval 1 hour, interval 1 hour) as t(hour)
    left join gpus_in_use as g on g.hour = t.hour
),

spend as (
    select
        billing_currency as currency,
        hour,
        sum(effective_cost) as value
    from cost_hourly
    where hour >= $window_start and hour < $window_end
    group by all
),

spend_span as (
    select
        currency,
        min(hour) as first_hour,
        max(hour) as last_hour
    from spend
    group by currency
),

spend_hours_of_span as (
    select
        'hourly_spend' as measure,
        s.currency,
        t.hour,
        coalesce(p.value, 0)::double as value
    from spend_span as s, range(s.first_hour, s.last_hour + interval 1 hour, interval 1 hour) as t(hour)
    left join spend as p on p.currency = s.currency and p.hour = t.hour
),

bucket_days as (
    -- each bucket's stored bytes per listing date, up to the week's end
    select
        store,
        bucket,
        inventory_date,
        sum(bytes) as bytes
    from storage_prefix_days
    where inventory_date < $window_end::date
    group by all
),

storage_span as (
    select
        min(inventory_date)::timestamp as first_day,
        max(inventory_date)::timestamp as last_day
    from bucket_days
    where inventory_date >= $window_start::date
),

storage_days_of_span as (
    -- per day of the span, each bucket as of its latest listing on or before the day
    select
        'stored_gib' as measure,
        null::varchar as currency,
        day,
        sum(bytes)::double / 1073741824 as value
    from (
        select
            t.day,
            b.bytes
        from storage_span as s, range(s.first_day, s.last_day + interval 1 day, interval 1 day) as t(day)
        inner join bucket_days as b on b.inventory_date <= t.day::date
        qualify row_number() over (partition by t.day, b.store, b.bucket order by b.inventory_date desc) = 1
    )
    group by day
),

periods as (
    select measure, currency, hour as period, value, 'hour' as per from gpu_hours_of_span
    union all
    select measure, currency, hour, value, 'hour' from spend_hours_of_span
    union all
    select measure, currency, day, value, 'day' from storage_days_of_span
)

select
    measure,
    currency,
    avg(value) as average,
    max(value) as peak,
    arg_max(period, (value, -epoch(period))) as peak_at,
    any_value(per) as per,
    count(*)::integer as periods
from periods
group by measure, currency
order by
    case measure when 'concurrent_gpus' then 1 when 'hourly_spend' then 2 else 3 end,
    currency
