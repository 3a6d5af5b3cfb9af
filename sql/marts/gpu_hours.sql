-- grain: one row per GPU x hour with telemetry samples; an hour a GPU did not report has no row (billed
--   hours without telemetry are in gpu_billed_hours and cost_hourly)
-- depends_on: gpu_job_hours
-- params: $day_from, $day_to (inclusive; pipelines.transform rebuilds only the days whose inputs changed)
-- The slices of gpu_job_hours added up per hour; means are weighted by samples.
-- hour: UTC start of the hour
-- gpu_id: the GPU's UUID, else host:index, else host:#<ordinal> for a GPU with neither (see
-- docs/telemetry.md); a MIG instance adds /mig<instance id>
-- samples: telemetry samples of the GPU in the hour
-- coverage: share of the hour the samples stand for (0-1; below 1 where telemetry is missing)
-- util_mean: mean GPU utilisation, percent (0-100)
-- util_p95: exact for an hour in one slice (most hours); for an hour a job started or ended in, the
-- largest of its slices' p95
-- job_id: the job with the most observed time in the hour
-- util_stddev: standard deviation of utilisation, pooled over the hour's samples
-- jobs: how many jobs ran on the GPU in the hour
-- cost_per_gpu_hour: the billed resource-hour's effective cost divided by the resource's GPUs
-- currency: of cost_per_gpu_hour (the resource's billing currency)
with slices as (
    select *
    from gpu_job_hours
    where hour >= $day_from::date and hour < $day_to::date + interval 1 day
)

select
    hour,
    host,
    any_value(resource_id) as resource_id,
    gpu_id,
    any_value(gpu_uuid) as gpu_uuid,
    any_value(gpu_index) as gpu_index,
    any_value(gpu_model) as gpu_model,
    sum(samples)::bigint as samples,
    least(sum(observed_seconds) / 3600, 1)::double as coverage,
    sum(util_sum) / nullif(sum(util_samples), 0) as util_mean,
    max(util_p95) as util_p95,
    max(util_max) as util_max,
    sum(mem_used_mean_mib * samples) / nullif(sum(samples) filter (where mem_used_mean_mib is not null), 0)
        as mem_used_mean_mib,
    max(mem_used_max_mib) as mem_used_max_mib,
    max(mem_total_mib) as mem_total_mib,
    sum(power_mean_w * samples) / nullif(sum(samples) filter (where power_mean_w is not null), 0)
        as power_mean_w,
    max(power_max_w) as power_max_w,
    sum(sm_active_mean * samples) / nullif(sum(samples) filter (where sm_active_mean is not null), 0)
        as sm_active_mean,
    sum(tensor_active_mean * samples)
    / nullif(sum(samples) filter (where tensor_active_mean is not null), 0) as tensor_active_mean,
    arg_max(job_id, observed_seconds) filter (where job_id is not null) as job_id,
    sqrt(greatest(
        sum(util_sumsq) / nullif(sum(util_samples), 0) - power(sum(util_sum) / nullif(sum(util_samples), 0), 2),
        0
    )) as util_stddev,
    sum(mem_util_mean * samples) / nullif(sum(samples) filter (where mem_util_mean is not null), 0)
        as mem_util_mean,
    max(power_limit_w) as power_limit_w,
    count(distinct job_key)::integer as jobs,
    any_value(instance_id) as instance_id,
    any_value(cost_per_gpu_hour) as cost_per_gpu_hour,
    any_value(currency) as currency
from slices
group by hour, host, gpu_id
