-- GPU002 overprovisioned-job
-- depends_on: resources, cost_hourly, gpu_job_hours, jobs_enriched (marts only)
-- params: $window_start, $window_end, $min_runtime_minutes, $unused_util_pct, $max_peak_util_pct,
--         $mig_headroom_pct, $gpu001_max_util_pct
-- A job is judged on all its GPU-slices (the whole job, also outside the window); only its slices in
-- the window are priced, and only in parts of hours in which some GPU of the instance worked above
-- GPU001's idle threshold (an hour where every GPU idled is GPU001's) and never in a failed job's hours
-- (GPU004's). Per GPU of the job: unused (mean util over the job <= unused_util_pct) -> its whole cost;
-- used, when every used GPU's p95 util <= max_peak_util_pct and a MIG slice of its model holds the
-- peak memory and p95 util with mig_headroom_pct to spare -> the share of its cost the slice does not
-- need ((7 - slices) / 7). `priced_units` is what this rule puts a price on.
with gpu_resources as (
    select *
    from resources
    where gpu_count > 0
),

billed as (
    select
        c.resource_id,
        c.hour,
        sum(c.effective_cost) as cost,
        any_value(c.billing_currency) as currency
    from cost_hourly as c
    inner join gpu_resources as r on r.resource_id = c.resource_id and c.billing_currency = r.currency
    where c.hour >= $window_start::timestamp and c.hour < $window_end::timestamp
    group by c.resource_id, c.hour
    having sum(c.effective_cost) > 0
),

candidates as (
    -- jobs that did not fail (a failed job's GPU-hours are GPU004's)
    select *
    from jobs_enriched
    where coalesce(state, '') not in (
        'FAILED', 'CANCELLED', 'TIMEOUT', 'OUT_OF_MEMORY', 'NODE_FAIL', 'BOOT_FAIL', 'DEADLINE'
    )
        -- jobs that ran in the window (judged on all their slices, priced in the window)
        and (started_at is null or started_at < $window_end::timestamp)
        and (ended_at is null or ended_at > $window_start::timestamp)
),

job_slices as (
    -- a GPU reported under two host names (node name and FQDN) is one GPU
    select s.*
    from gpu_job_hours as s
    inner join candidates as j on j.job_key = s.job_key
    where s.resource_id is not null
    qualify row_number() over (partition by s.resource_id, s.gpu_id, s.slice_start order by s.host) = 1
),

spans as (
    select
        j.job_key,
        min(s.slice_start) as first_seen,
        greatest(
            epoch(coalesce(j.ended_at, max(s.slice_end))) - epoch(coalesce(j.started_at, min(s.slice_start))), 0
        ) as runtime_s
    from job_slices as s
    inner join candidates as j on j.job_key = s.job_key
    group by j.job_key, j.started_at, j.ended_at
),

per_gpu as (
    select
        job_key,
        resource_id,
        gpu_id,
        any_value(gpu_index) as gpu_index,
        any_value(gpu_model) as gpu_model,
        sum(util_sum) / nullif(sum(util_samples), 0) as util_mean,
        max(util_p95) as util_p95,
        max(mem_used_max_mib) as mem_max_mib,
        max(mem_total_mib) as mem_total_mib
    from job_slices
    group by job_key, resource_id, gpu_id
),

per_job as (
    select
        g.job_key,
        count(*) as gpus,
        count(*) filter (where g.util_mean <= $unused_util_pct) as unused_gpus,
        count(*) filter (where g.util_mean > $unused_util_pct) as used_gpus,
        max(g.util_mean) filter (where g.util_mean <= $unused_util_pct) as unused_util_max,
        avg(g.util_mean) filter (where g.util_mean > $unused_util_pct) as used_util_mean,
        max(g.util_p95) filter (where g.util_mean > $unused_util_pct) as used_util_p95,
        max(g.mem_max_mib) filter (where g.util_mean > $unused_util_pct) as used_mem_max_mib,
        min(g.mem_total_mib) filter (where g.util_mean > $unused_util_pct) as used_mem_total_mib,
        any_value(g.gpu_model) as gpu_model,
        list(g.gpu_index order by g.gpu_index) filter (where g.util_mean <= $unused_util_pct) as unused_indices,
        list(distinct g.resource_id) as resource_ids,
        bool_and(regexp_matches(coalesce(g.gpu_model, ''), '(A100|A800|H100|H800|H20|GH200|B100|B200)'))
            as mig_capable
    from per_gpu as g
    where g.util_mean is not null
    group by g.job_key
),

fitted as (
    select
        *,
        -- MIG profiles of a 7-slice GPU: 1g, 2g, 3g, 4g, 7g use 1, 2, 4, 4, 8 eighths of its memory
        greatest(ceil(7 * least(used_util_p95 * (1 + $mig_headroom_pct / 100), 100) / 100), 1) as compute_need,
        greatest(ceil(8 * used_mem_max_mib * (1 + $mig_headroom_pct / 100) / nullif(used_mem_total_mib, 0)), 1)
            as memory_need
    from per_job
),

sized as (
    select
        *,
        case
            when not mig_capable or used_gpus = 0 or used_util_p95 is null or used_mem_max_mib is null
                or used_util_p95 > $max_peak_util_pct then 7
            when compute_need <= 1 and memory_need <= 1 then 1
            when compute_need <= 2 and memory_need <= 2 then 2
            when compute_need <= 3 and memory_need <= 4 then 3
            when compute_need <= 4 and memory_need <= 4 then 4
            else 7
        end as mig_slices
    from fitted
),

profiled as (
    select
        *,
        case when mig_slices < 7 then printf(
            '%dg.%dgb', mig_slices,
            ceil(used_mem_total_mib / 1024 * case mig_slices when 1 then 1 when 2 then 2 else 4 end / 8)::bigint
        ) end as mig_profile
    from sized
),

worked as (
    -- parts of hours in which some GPU of the instance worked (every other part is GPU001's)
    select
        resource_id,
        hour,
        slice_start
    from gpu_job_hours
    where resource_id is not null
        and hour >= $window_start::timestamp and hour < $window_end::timestamp
    group by resource_id, hour, slice_start
    having max(greatest(util_mean, 100 * sm_active_mean)) > $gpu001_max_util_pct
),

priced_units as (
    select
        s.resource_id,
        s.hour,
        s.slice_start,
        s.slice_end,
        s.gpu_id,
        s.job_key,
        b.currency,
        case when g.util_mean <= $unused_util_pct then 'unused' else 'mig_fit' end as kind,
        s.slice_seconds / 3600 as gpu_hours,
        b.cost / greatest(r.gpu_count, coalesce(r.gpus_reporting, 0)) * s.slice_seconds / 3600
        * case when g.util_mean <= $unused_util_pct then 1 else (7 - p.mig_slices) / 7 end as cost
    from job_slices as s
    inner join per_gpu as g on g.job_key = s.job_key and g.resource_id = s.resource_id and g.gpu_id = s.gpu_id
    inner join profiled as p on p.job_key = s.job_key
    inner join spans as sp on sp.job_key = s.job_key
    inner join worked as w on w.resource_id = s.resource_id and w.hour = s.hour and w.slice_start = s.slice_start
    inner join billed as b on b.resource_id = s.resource_id and b.hour = s.hour
    inner join gpu_resources as r on r.resource_id = s.resource_id
    where sp.runtime_s >= $min_runtime_minutes * 60
        and (g.util_mean <= $unused_util_pct or p.mig_slices < 7)
),

job_currency as (
    select job_key, mode(currency) as currency
    from priced_units
    group by job_key
),

waste as (
    select
        u.job_key,
        c.currency,
        sum(u.cost) as waste,
        sum(u.cost) filter (where u.kind = 'unused') as unused_cost,
        sum(u.cost) filter (where u.kind = 'mig_fit') as mig_cost,
        sum(u.gpu_hours) as priced_gpu_hours,
        count(distinct u.hour) as priced_hours
    from priced_units as u
    inner join job_currency as c on c.job_key = u.job_key and c.currency = u.currency
    group by u.job_key, c.currency
    having sum(u.cost) > 0
),

combined as (
    select
        j.*,
        w.currency as waste_currency,
        w.waste,
        w.unused_cost,
        w.mig_cost,
        w.priced_gpu_hours,
        w.priced_hours,
        p.gpus,
        p.unused_gpus,
        p.used_gpus,
        p.unused_util_max,
        p.used_util_mean,
        p.used_util_p95,
        p.used_mem_max_mib,
        p.used_mem_total_mib,
        p.gpu_model as model,
        p.unused_indices,
        p.mig_slices,
        p.mig_profile,
        sp.runtime_s as observed_runtime_s,
        coalesce(array_to_string(j.hosts, ', '), array_to_string(p.resource_ids, ', ')) as host_text,
        regexp_replace(coalesce(p.gpu_model, 'GPU'), '^NVIDIA\s+', '') as gpu_label,
        case
            when sp.runtime_s >= 3600 then printf('%.1f h', sp.runtime_s / 3600)
            when sp.runtime_s >= 60 then printf('%.0f min', sp.runtime_s / 60)
            else printf('%.0f s', sp.runtime_s)
        end as runtime_text
    from waste as w
    inner join candidates as j on j.job_key = w.job_key
    inner join profiled as p on p.job_key = w.job_key
    inner join spans as sp on sp.job_key = w.job_key
)

select
    job_key as resource_id,
    case scheduler when 'slurm' then 'Slurm job' when 'kubernetes' then 'Kubernetes pod' else 'job' end
        as resource_type,
    provider,
    account_id,
    region_id,
    team,
    project,
    user as owner,
    job_id,
    'waste' as status,
    printf('Job %s%s on %s ', job_id, coalesce(' (' || job_name || ')', ''), host_text)
    || case
        when unused_gpus > 0 and used_gpus > 0 then printf(
            'used %d of its %d×%s for %s: %d GPU(s) averaged ≤%.1f%% util all job long (the others %.1f%%)',
            used_gpus, gpus, gpu_label, runtime_text, unused_gpus, unused_util_max, used_util_mean
        )
        when unused_gpus > 0 then printf(
            'held %d×%s for %s without using them (≤%.1f%% util all job long)',
            gpus, gpu_label, runtime_text, unused_util_max
        )
        else ''
    end
    || case
        when mig_slices < 7 then printf(
            '%sheld %d×%s for %s at %.1f%% mean / %.0f%% p95 util and at most %s of %s MiB (%.1f%%): '
            || 'a %s MIG slice (%d/7 of the GPU) fits, so %d/7 of %s cost bought nothing',
            case when unused_gpus > 0 then '; its used GPUs ' else '' end,
            used_gpus, gpu_label, runtime_text, used_util_mean, used_util_p95,
            printf('%,d', used_mem_max_mib::bigint), printf('%,d', used_mem_total_mib::bigint),
            100 * used_mem_max_mib / used_mem_total_mib, mig_profile, mig_slices, 7 - mig_slices,
            case when used_gpus = 1 then 'its' else 'their' end
        )
        else ''
    end
    || printf(', costing %s %.2f.', waste_currency, waste) as reason,
    json_object(
        'job_id', job_id,
        'job_name', job_name,
        'user', user,
        'state', state,
        'started_at', strftime(started_at, '%Y-%m-%dT%H:%M:%SZ'),
        'ended_at', strftime(ended_at, '%Y-%m-%dT%H:%M:%SZ'),
        'runtime_hours', round(observed_runtime_s / 3600, 4),
        'hosts', hosts,
        'resource_ids', resource_ids,
        'gpu_model', model,
        'gpus', gpus,
        'gpus_requested', gpus_requested,
        'unused_gpus', unused_gpus,
        'unused_gpu_indices', unused_indices,
        'unused_util_max_pct', round(unused_util_max, 2),
        'used_gpus', used_gpus,
        'used_util_mean_pct', round(used_util_mean, 2),
        'used_util_p95_pct', round(used_util_p95, 2),
        'used_mem_max_mib', round(used_mem_max_mib, 0),
        'mem_total_mib', round(used_mem_total_mib, 0),
        'mig_profile', mig_profile,
        'mig_slices', case when mig_slices < 7 then mig_slices end,
        'priced_gpu_hours', round(priced_gpu_hours, 4),
        'unused_gpu_cost', round(coalesce(unused_cost, 0), 2),
        'mig_fit_cost', round(coalesce(mig_cost, 0), 2),
        'team_source', team_source
    ) as evidence,
    waste::decimal(18, 6) as estimated_waste,
    waste_currency as currency,
    'cost_hourly ÷ GPUs × the job''s hours for each GPU it did not use, plus (7 − MIG slices) / 7 of it '
    || 'for each GPU a MIG slice would have served, in hours some GPU of the instance worked' as waste_basis
from combined
order by estimated_waste desc, resource_id
