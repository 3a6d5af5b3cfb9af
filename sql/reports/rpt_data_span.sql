-- grain: one row per kind of data the warehouse holds (billing, GPU telemetry, jobs, storage inventories)
-- depends_on: billing_line_items, gpu_samples, gpu_hourly_stats, gpu_samples_pruned, jobs, storage_snapshots
-- params: $window_start, $window_end
-- What the warehouse holds and when: the earliest and latest time each kind's rows cover (UTC), and how
-- many of its rows fall in [$window_start, $window_end). The default `history_start` (the first week
-- Dagster's weekly partitions and `wastewatch run --week` offer) is the earliest first_at; a week where
-- every in_window is 0 has no data. A kind with no rows has NULL times; last_at is the last instant covered.
select
    'billing' as kind,
    min(charge_period_start) as first_at,
    max(charge_period_end) - interval 1 microsecond as last_at,  -- the end is exclusive
    count(*) filter (where charge_period_start < $window_end and charge_period_end > $window_start) as in_window
from billing_line_items
union all
select
    'GPU telemetry',
    min(first_at),
    max(last_at),
    sum(in_window)::bigint
from (
    select
        min(ts) as first_at,
        max(ts) as last_at,
        count(*) filter (where ts >= $window_start and ts < $window_end) as in_window
    from gpu_samples
    union all
    -- hours a metrics store pre-aggregated (the `prometheus` source)
    select
        min(hour),
        max(hour) + interval 1 hour - interval 1 microsecond,
        count(*) filter (where hour >= $window_start and hour < $window_end)
    from gpu_hourly_stats
    union all
    -- days whose raw samples the retention dropped: their hours live on in the roll-up
    select
        min(first_ts),
        max(last_ts),
        coalesce(sum(samples) filter (where first_ts < $window_end and last_ts >= $window_start), 0)
    from gpu_samples_pruned
)
union all
select
    'jobs',
    min(coalesce(started_at, submitted_at)),
    max(coalesce(ended_at, started_at, submitted_at)),
    count(*) filter (
        where coalesce(started_at, submitted_at) < $window_end
        and coalesce(ended_at, started_at, submitted_at) >= $window_start
    )
from jobs
union all
select
    'storage inventories',
    min(inventory_at),
    max(inventory_at),
    count(*) filter (where inventory_at >= $window_start and inventory_at < $window_end)
from storage_snapshots
