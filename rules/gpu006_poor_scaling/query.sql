-- GPU006 poor-scaling
-- depends_on: job_scaling, jobs_enriched, gpu_job_spans, gpu_billed_hours, resources, gpu_claims (marts only)
-- params: $window_start, $window_end, $min_scaling_efficiency, $min_gpus, $claim_thresholds
-- A job on at least min_gpus GPUs whose per-GPU throughput is at or below min_scaling_efficiency of the best
-- smaller run of its configuration (job_scaling) wasted the GPU-hours beyond what linear scaling from that
-- run needed: gpus x (1 - efficiency) of its GPUs. gpu_claims gives this rule those GPUs' slices (the
-- first job_excess_gpus GPUs of the job; the last of them partly, by the fraction of a GPU it stands for),
-- after GPU004, GPU001, GPU002 and GPU003 and before GPU005, which prices its MFU shortfall on the rest.
-- A job of min_gpus GPUs or more without a training log, a configuration or a smaller run of the same
-- configuration is `insufficient_data`, naming what it lacks. `priced_units` is what this rule prices.
with gpu_resources as (
    select *
    from resources
    where gpu_count > 0
),

billed as (
    select *
    from gpu_billed_hours
    where hour >= $window_start::timestamp and hour < $window_end::timestamp
),

in_window as (
    -- jobs on enough GPUs that ran in the window
    select *
    from jobs_enriched as e
    where (e.started_at is null or e.started_at < $window_end::timestamp)
        and (e.ended_at is null or e.ended_at > $window_start::timestamp)
),

judged as (
    -- jobs with a training log, on at least min_gpus GPUs
    select s.*
    from job_scaling as s
    inner join in_window as e on e.job_key = s.job_key
    where s.gpu_count >= $min_gpus
),

unlogged as (
    -- jobs that did not fail, on at least min_gpus GPUs, with no training log to measure their throughput
    select e.*
    from in_window as e
    inner join gpu_job_spans as sp on sp.job_key = e.job_key
    where coalesce(e.gpus_requested, e.gpus_observed) >= $min_gpus
        and not exists (select 1 from job_scaling as s where s.job_key = e.job_key)
),

low_jobs as (
    select *
    from judged
    where efficiency <= $min_scaling_efficiency
),

claims as (
    -- who claims each in-week GPU-slice of the low jobs' GPUs beyond linear scaling
    select
        g.resource_id,
        g.hour,
        g.slice_start,
        g.slice_end,
        g.gpu_id,
        g.job_key,
        least(g.job_excess_gpus - g.job_gpu_rank, 1) as gpu_share,
        claimed_by(g.claims, $claim_thresholds) as claimed_by
    from gpu_claims as g
    inner join low_jobs as j on j.job_key = g.job_key
    where g.hour >= $window_start::timestamp and g.hour < $window_end::timestamp
        and g.job_gpu_rank < g.job_excess_gpus
),

slice_costs as (
    select
        c.*,
        b.currency,
        (epoch(c.slice_end) - epoch(c.slice_start)) / 3600 as gpu_hours,
        -- per GPU: the instance-hour's cost over its GPUs (more if the telemetry saw more than billed)
        b.cost / greatest(r.gpu_count, coalesce(r.gpus_reporting, 0))
            * (epoch(c.slice_end) - epoch(c.slice_start)) / 3600 as gpu_cost
    from claims as c
    inner join billed as b on b.resource_id = c.resource_id and b.hour = c.hour
    inner join gpu_resources as r on r.resource_id = c.resource_id
    where c.claimed_by is distinct from 'GPU001'
),

priced_units as (
    select
        resource_id,
        hour,
        slice_start,
        slice_end,
        gpu_id,
        job_key,
        currency,
        gpu_hours * gpu_share as gpu_hours,
        gpu_cost * gpu_share as cost
    from slice_costs
    where claimed_by = 'GPU006'
),

job_currency as (
    select job_key, mode(currency) as currency
    from slice_costs
    group by job_key
),

waste as (
    select
        j.job_key,
        c.currency,
        coalesce(sum(u.cost), 0) as waste,
        coalesce(sum(u.gpu_hours), 0) as priced_gpu_hours,
        (select list(distinct sc.claimed_by order by sc.claimed_by) from slice_costs as sc
            where sc.job_key = j.job_key and sc.claimed_by is distinct from 'GPU006') as claimed_by
    from low_jobs as j
    left join job_currency as c on c.job_key = j.job_key
    left join priced_units as u on u.job_key = j.job_key and u.currency = c.currency
    group by j.job_key, c.currency
),

findings as (
    -- a low job: waste, or suspect when other rules claim its GPU-hours, or no billed hour in the week
    select
        j.job_key,
        case
            when w.waste > 0 then 'waste'
            when len(list_filter(w.claimed_by, lambda x: x is not null)) > 0 then 'suspect'
            else 'insufficient_data'
        end as status,
        printf(
            'Job %s%s ran %s on %d×%s at %.0f%% of the per-GPU throughput of job %s on %d GPUs '
            || '(%.0f vs %.0f tokens/s per GPU; floor %.0f%%): %s',
            j.job_id, coalesce(' (' || j.job_name || ')', ''), j.config_key, j.gpu_count, coalesce(j.gpu_model, 'GPUs'),
            100 * j.efficiency, j.baseline_job_id, j.baseline_gpu_count, j.tokens_per_gpu_s,
            j.baseline_tokens_per_gpu_s, 100 * $min_scaling_efficiency,
            case
                when w.waste > 0 then printf(
                    'the GPU-hours beyond linear scaling, %.0f%% of its GPUs (%.1f GPU-hours in the week), cost %s %.2f.',
                    100 * j.excess_share, w.priced_gpu_hours, w.currency, w.waste
                )
                when len(list_filter(w.claimed_by, lambda x: x is not null)) > 0 then printf(
                    'its GPU-hours beyond linear scaling are priced by %s, so GPU006 adds nothing.',
                    array_to_string(list_filter(w.claimed_by, lambda x: x is not null), ' and ')
                )
                else 'no billed or priced GPU-hour of the job in the week: nothing to price.'
            end
        ) as reason,
        w.waste,
        w.currency,
        w.priced_gpu_hours,
        w.claimed_by
    from low_jobs as j
    inner join waste as w on w.job_key = j.job_key
    union all by name
    -- a job on enough GPUs that cannot be judged: never 0 waste, insufficient data naming what it lacks
    select
        job_key,
        'insufficient_data' as status,
        printf(
            'Job %s%s ran on %d GPUs; its scaling efficiency cannot be judged: %s.',
            job_id, coalesce(' (' || job_name || ')', ''), gpu_count, lacks
        ) as reason,
        0 as waste
    from judged
    where lacks is not null
    union all by name
    select
        job_key,
        'insufficient_data' as status,
        printf(
            'Job %s%s ran on %d GPUs; its scaling efficiency cannot be judged: it has no training log '
            || '(a `train_log` source gives its throughput and model configuration).',
            job_id, coalesce(' (' || job_name || ')', ''), coalesce(gpus_requested, gpus_observed)
        ) as reason,
        0 as waste
    from unlogged
)

select
    f.job_key as resource_id,
    -- what a finding about one job calls it (pipelines/catalog/scheduler_names.csv)
    coalesce(
        (select n.job_type from scheduler_names as n where n.scheduler = e.scheduler),
        (select n.job_type from scheduler_names as n where n.scheduler = '*')
    ) as resource_type,
    e.provider,
    e.account_id,
    e.region_id,
    e.team,
    e.project,
    e.user as owner,
    e.job_id,
    f.status,
    f.reason,
    json_object(
        'job_id', e.job_id,
        'job_name', e.job_name,
        'state', e.state,
        'started_at', strftime(e.started_at, '%Y-%m-%dT%H:%M:%SZ'),
        'ended_at', strftime(e.ended_at, '%Y-%m-%dT%H:%M:%SZ'),
        'config_key', s.config_key,
        'gpus', coalesce(s.gpu_count, e.gpus_requested, e.gpus_observed),
        'gpu_model', s.gpu_model,
        'tokens_per_gpu_s', round(s.tokens_per_gpu_s, 2),
        'mfu', round(s.mfu, 4),
        'baseline_job_key', s.baseline_job_key,
        'baseline_job_id', s.baseline_job_id,
        'baseline_gpus', s.baseline_gpu_count,
        'baseline_tokens_per_gpu_s', round(s.baseline_tokens_per_gpu_s, 2),
        'efficiency', round(s.efficiency, 4),
        'excess_share', round(s.excess_share, 4),
        'lacks', case when s.job_key is null then 'no training log' else s.lacks end,
        'claimed_by', f.claimed_by,
        'priced_gpu_hours', round(f.priced_gpu_hours, 4)
    ) as evidence,
    f.waste::decimal(18, 6) as estimated_waste,
    coalesce(f.currency, e.currency) as currency,
    'cost_hourly ÷ GPUs for each GPU-slice of the job''s GPUs beyond linear scaling (gpus × (1 − efficiency))'
        as waste_basis
from findings as f
inner join jobs_enriched as e on e.job_key = f.job_key
left join job_scaling as s on s.job_key = f.job_key
order by estimated_waste desc, resource_id
