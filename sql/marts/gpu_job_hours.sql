-- grain: one row per GPU x hour x slice with telemetry samples (the slice: the part of the hour between job
--   starts/ends on the GPU's host); an hour a GPU did not report has no row
-- depends_on: int_gpu_slices, int_jobs, int_host_resources, resources, cost_hourly
-- params: $day_from, $day_to (inclusive; pipelines.transform rebuilds only the days whose inputs changed)
-- An hour with no job starting or ending in it is one slice ([hour, hour + 1 h)).
-- hour: UTC start of the hour the slice lies in
-- slice_seconds: length of the slice [slice_start, slice_end)
-- gpu_id: the GPU's UUID, else host:index, else host:#<ordinal> for a GPU with neither (see
-- docs/telemetry.md); a MIG instance adds /mig<instance id>
-- job_key: the job the telemetry itself names (DCGM hpc_job label; a Kubernetes pod by namespace and
-- name), else the scheduler job running on the host (and GPU) during the slice; NULL when none ran
-- job_source: telemetry | scheduler: which of the two named job_key
-- jobs_running: scheduler jobs running on the host (and GPU) when the slice starts
-- observed_seconds: the time the slice's samples stand for
-- coverage: share of the slice the samples stand for (0-1)
-- util_mean: mean GPU utilisation, percent (0-100)
-- idle_share: share of the slice's utilisation samples at or below 5 %
-- cost_per_gpu_hour: the billed resource-hour's effective cost divided by the resource's GPUs
-- cost: the slice's share of cost_per_gpu_hour (by its length); the GPU rules price from gpu_billed_hours
-- currency: of cost and cost_per_gpu_hour (the resource's billing currency)
with slices as (
    select *
    from int_gpu_slices
    where day >= $day_from and day <= $day_to
),

named as (
    -- jobs the telemetry names: a DCGM hpc_job id, else a Kubernetes pod (two equi-joins, not one OR)
    select
        host,
        gpu_id,
        hour,
        slice_start,
        job_key
    from (
        select s.host, s.gpu_id, s.hour, s.slice_start, j.job_key, 1 as priority, j.started_at
        from slices as s
        inner join int_jobs as j on j.job_id = s.telemetry_job_id
        where s.telemetry_job_id is not null
        union all
        select s.host, s.gpu_id, s.hour, s.slice_start, j.job_key, 2, j.started_at
        from slices as s
        inner join int_jobs as j
            on j.scheduler = 'kubernetes' and j.job_name = s.pod
        where s.pod is not null and (s.namespace is null or j.account = s.namespace)
    )
    qualify row_number() over (
        partition by host, gpu_id, hour, slice_start order by priority, started_at desc nulls last, job_key
    ) = 1
),

hourly_cost as (
    select
        c.resource_id,
        c.hour,
        sum(c.effective_cost) as cost,
        any_value(c.billing_currency) as currency
    from cost_hourly as c
    inner join resources as r on r.resource_id = c.resource_id and c.billing_currency = r.currency
    where c.hour >= $day_from::date and c.hour < $day_to::date + interval 1 day
    group by c.resource_id, c.hour
)

select
    s.hour,
    s.slice_start,
    s.slice_end,
    epoch(s.slice_end) - epoch(s.slice_start) as slice_seconds,
    s.host,
    hr.resource_id,
    coalesce(s.instance_id, hr.instance_id) as instance_id,
    s.gpu_id,
    s.gpu_uuid,
    s.gpu_index,
    s.gpu_model,
    s.mig_profile,
    coalesce(n.job_key, s.job_key) as job_key,
    j.job_id,
    j.state as job_state,
    case when n.job_key is not null then 'telemetry' when s.job_key is not null then 'scheduler' end
        as job_source,
    s.jobs_running,
    s.samples,
    s.observed_s as observed_seconds,
    least(s.observed_s / nullif(epoch(s.slice_end) - epoch(s.slice_start), 0), 1)::double as coverage,
    s.util_sum / nullif(s.util_samples, 0) as util_mean,
    sqrt(greatest(
        s.util_sumsq / nullif(s.util_samples, 0) - power(s.util_sum / nullif(s.util_samples, 0), 2), 0
    )) as util_stddev,
    s.util_p95,
    s.util_max,
    s.idle_samples::double / nullif(s.util_samples, 0) as idle_share,
    s.mem_util_mean,
    s.mem_used_mean_mib,
    s.mem_used_max_mib,
    s.mem_total_mib,
    s.power_mean_w,
    s.power_max_w,
    s.power_limit_w,
    s.sm_active_mean,
    s.tensor_active_mean,
    s.util_samples,
    s.util_sum,
    s.util_sumsq,
    (hc.cost / nullif(r.gpu_count, 0))::decimal(18, 6) as cost_per_gpu_hour,
    (hc.cost / nullif(r.gpu_count, 0) * (epoch(s.slice_end) - epoch(s.slice_start)) / 3600)::decimal(18, 6)
        as cost,
    hc.currency
from slices as s
left join named as n
    on n.host = s.host and n.gpu_id = s.gpu_id and n.hour = s.hour and n.slice_start = s.slice_start
left join int_jobs as j on j.job_key = coalesce(n.job_key, s.job_key)
left join int_host_resources as hr on hr.host = s.host
left join resources as r on r.resource_id = hr.resource_id
left join hourly_cost as hc on hc.resource_id = hr.resource_id and hc.hour = s.hour
