-- grain: one row per scheduler job (job_key = scheduler/cluster/job_id), from its latest record
-- depends_on: int_jobs, int_job_hosts, int_host_resources, resources, gpu_job_hours
-- The job record with what the warehouse knows around it: the billed resources of its hosts, team and
-- project from the record or else from the billing tags of those resources (team_source says which),
-- and its GPU usage and cost from gpu_job_hours (the GPU-slices attributed to it).
-- team_source: record | host billing tags: where team and project come from
-- resource_ids: billed resources the job's GPU-slices ran on, else those its hosts map to
-- gpus_observed: distinct GPUs with telemetry attributed to the job
-- gpu_hours: GPU-hours of the slices attributed to the job
-- gpu_hours_observed: the part of gpu_hours the telemetry samples stand for
-- util_mean: mean GPU utilisation over the job's samples, percent (0-100)
-- cost: GPU cost of the job's slices (gpu_job_hours.cost), in currency
with host_resources as (
    select
        jh.job_key,
        list(distinct hr.resource_id order by hr.resource_id) filter (where hr.resource_id is not null)
            as resource_ids
    from int_job_hosts as jh
    inner join int_host_resources as hr on hr.host_key = jh.host_key
    group by jh.job_key
),

usage as (
    select
        job_key,
        list(distinct resource_id order by resource_id) filter (where resource_id is not null) as resource_ids,
        count(distinct gpu_id) as gpus_observed,
        sum(observed_seconds) / 3600 as gpu_hours_observed,
        sum(slice_seconds) / 3600 as gpu_hours,
        sum(util_sum) / nullif(sum(util_samples), 0) as util_mean,
        max(util_p95) as util_p95,
        max(mem_used_max_mib) as mem_used_max_mib,
        sum(power_mean_w * samples) / nullif(sum(samples) filter (where power_mean_w is not null), 0)
            as power_mean_w,
        sum(cost) as cost,
        any_value(currency) as currency
    from gpu_job_hours
    where job_key is not null
    group by job_key
),

resource_list as (
    select
        j.job_key,
        coalesce(u.resource_ids, h.resource_ids, []) as resource_ids
    from int_jobs as j
    left join usage as u on u.job_key = j.job_key
    left join host_resources as h on h.job_key = j.job_key
),

tagged as (
    -- the billing tags of the resources the job ran on: the most common value wins
    select
        rl.job_key,
        mode(r.team) as team,
        mode(r.project) as project,
        any_value(r.provider) as provider,
        any_value(r.account_id) as account_id,
        any_value(r.region_id) as region_id,
        any_value(r.currency) as currency
    from resource_list as rl, unnest(rl.resource_ids) as u(resource_id)
    inner join resources as r on r.resource_id = u.resource_id
    group by rl.job_key
)

select
    j.job_key,
    j.job_id,
    j.scheduler,
    j.cluster,
    j.job_name,
    j.run_id,
    j.user,
    j.account,
    coalesce(j.team, t.team) as team,
    coalesce(j.project, t.project) as project,
    case
        when j.team is not null then 'record'
        when t.team is not null then 'host billing tags'
    end as team_source,
    j.partition,
    j.state,
    j.state_raw,
    j.exit_code,
    j.submitted_at,
    j.started_at,
    j.ended_at,
    j.runtime_s,
    j.gpus_requested,
    j.gpu_type,
    j.nodes,
    j.hosts,
    j.instance_ids,
    j.gpu_indices,
    rl.resource_ids,
    t.provider,
    t.account_id,
    t.region_id,
    coalesce(u.currency, t.currency) as currency,
    u.gpus_observed,
    u.gpu_hours,
    u.gpu_hours_observed,
    u.util_mean,
    u.util_p95,
    u.mem_used_max_mib,
    u.power_mean_w,
    u.cost::decimal(18, 6) as cost,
    j.last_checkpoint_at,
    j.tags
from int_jobs as j
left join resource_list as rl on rl.job_key = j.job_key
left join tagged as t on t.job_key = j.job_key
left join usage as u on u.job_key = j.job_key
