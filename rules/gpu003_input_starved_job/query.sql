-- GPU003 input-starved-job
-- depends_on: resources, gpu_billed_hours, gpu_job_hours, gpu_job_spans, jobs_enriched, gpu_claims (marts only)
-- params: $window_start, $window_end, $claim_thresholds (this rule's thresholds reach its claim in
--         gpu_claims through them: min_runtime_minutes, min_mean_util_pct, max_mean_util_pct,
--         min_util_stddev, min_peak_util_pct, max_power_pct)
-- A GPU of a job is starved when, over the whole job, it ran in bursts: moderate mean utilisation,
-- a high spread of its samples (sample-level stddev pooled from gpu_job_hours' exact sums), bursts
-- reaching min_peak_util_pct (p95), at low power: this rule's claim in gpu_claims. Its in-week slices the
-- claim wins are priced at their idle share (1 - util_mean / 100). Precedence (gpu_claims): never a failed
-- job (GPU004), never a part of an hour in which every GPU idled (GPU001), never a GPU GPU002 claims (mean
-- util <= its unused threshold, or p95 <= its MIG peak bound). `priced_units` is what this rule prices.
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

candidates as (
    -- jobs that did not fail (gpu_job_spans holds none: a failed job's GPU-hours are GPU004's) and ran in
    -- the window (judged on all their slices, priced in the window)
    select j.*
    from jobs_enriched as j
    inner join gpu_job_spans as sp on sp.job_key = j.job_key
    where (j.started_at is null or j.started_at < $window_end::timestamp)
        and (j.ended_at is null or j.ended_at > $window_start::timestamp)
),

job_slices as (
    -- a GPU reported under two host names (node name and FQDN) is one GPU
    select s.*
    from gpu_job_hours as s
    inner join candidates as j on j.job_key = s.job_key
    where s.resource_id is not null
    qualify row_number() over (partition by s.resource_id, s.gpu_id, s.slice_start order by s.host) = 1
),

per_gpu as (
    select
        job_key,
        resource_id,
        gpu_id,
        any_value(gpu_model) as gpu_model,
        sum(util_samples) as util_samples,
        sum(util_sum) / nullif(sum(util_samples), 0) as util_mean,
        sqrt(greatest(
            sum(util_sumsq) / nullif(sum(util_samples), 0) - power(sum(util_sum) / nullif(sum(util_samples), 0), 2),
            0
        )) as util_stddev,
        max(util_p95) as util_p95,
        sum(idle_share * util_samples) / nullif(sum(util_samples), 0) as idle_share,
        sum(power_mean_w * samples) / nullif(sum(samples) filter (where power_mean_w is not null), 0)
            as power_mean_w,
        max(power_limit_w) as power_limit_w,
        max(mem_used_max_mib) as mem_max_mib,
        max(mem_total_mib) as mem_total_mib
    from job_slices
    group by job_key, resource_id, gpu_id
),

claims as (
    -- the GPU-slices of the candidate jobs this rule claims (gpu_claims), over the whole job
    select
        c.resource_id,
        c.hour,
        c.slice_start,
        c.gpu_id,
        c.job_key
    from gpu_claims as c
    inner join candidates as j on j.job_key = c.job_key
    where claimed_by(c.claims, $claim_thresholds) = 'GPU003'
),

starved_gpus as (
    -- the GPUs the claim names starved (the claim's tests are on the whole job, so all a GPU's slices or none)
    select g.*
    from per_gpu as g
    where exists (
        select 1
        from claims as c
        where c.job_key = g.job_key and c.resource_id = g.resource_id and c.gpu_id = g.gpu_id
    )
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
        s.slice_seconds / 3600 as gpu_hours,
        s.util_mean,
        -- per GPU: the instance-hour's cost over its GPUs (more if the telemetry saw more than billed)
        b.cost / greatest(r.gpu_count, coalesce(r.gpus_reporting, 0)) * s.slice_seconds / 3600 as gpu_cost,
        b.cost / greatest(r.gpu_count, coalesce(r.gpus_reporting, 0)) * s.slice_seconds / 3600
        * greatest(1 - coalesce(s.util_mean, 0) / 100, 0) as cost
    from job_slices as s
    inner join claims as c
        on c.resource_id = s.resource_id and c.hour = s.hour and c.slice_start = s.slice_start
        and c.gpu_id = s.gpu_id and c.job_key = s.job_key
    inner join billed as b on b.resource_id = s.resource_id and b.hour = s.hour
    inner join gpu_resources as r on r.resource_id = s.resource_id
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
        sum(u.gpu_cost) as gpu_cost,
        sum(u.gpu_hours) as priced_gpu_hours,
        count(distinct u.gpu_id) as priced_gpus
    from priced_units as u
    inner join job_currency as c on c.job_key = u.job_key and c.currency = u.currency
    group by u.job_key, c.currency
    having sum(u.cost) > 0
),

starved_stats as (
    select
        job_key,
        count(*) as starved_gpus,
        sum(util_mean * util_samples) / sum(util_samples) as util_mean,
        avg(util_stddev) as util_stddev,
        max(util_p95) as util_p95,
        sum(idle_share * util_samples) / sum(util_samples) as idle_share,
        avg(power_mean_w) as power_mean_w,
        avg(power_mean_w / nullif(power_limit_w, 0)) as power_share,
        max(mem_max_mib) as mem_max_mib,
        max(mem_total_mib) as mem_total_mib,
        any_value(gpu_model) as gpu_model
    from starved_gpus
    group by job_key
),

combined as (
    select
        j.*,
        w.currency as waste_currency,
        w.waste,
        w.gpu_cost,
        w.priced_gpu_hours,
        w.priced_gpus,
        st.starved_gpus,
        st.util_mean as starved_util_mean,
        st.util_stddev as starved_util_stddev,
        st.util_p95 as starved_util_p95,
        st.idle_share as starved_idle_share,
        st.power_mean_w as starved_power_w,
        st.power_share as starved_power_share,
        st.mem_max_mib as starved_mem_max_mib,
        st.mem_total_mib as starved_mem_total_mib,
        sp.runtime_s as observed_runtime_s,
        coalesce(array_to_string(j.hosts, ', '), array_to_string(j.resource_ids, ', ')) as host_text,
        regexp_replace(coalesce(st.gpu_model, 'GPU'), '^NVIDIA\s+', '') as gpu_label,
        case
            when sp.runtime_s >= 3600 then printf('%.1f h', sp.runtime_s / 3600)
            when sp.runtime_s >= 60 then printf('%.0f min', sp.runtime_s / 60)
            else printf('%.0f s', sp.runtime_s)
        end as runtime_text,
        -- GPU-hours priced by a `pricing:` cost model are named so (a bill's are plain GPU-hours)
        (select case string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis)
            when 'owned' then ' (modelled hours, owned)'
            when 'contract' then ' (contract hours)'
            when 'bill' then ''
            else coalesce(' (' || string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis) || ' hours)', '')
        end from resources as r where list_contains(j.resource_ids, r.resource_id)) as hours_label
    from waste as w
    inner join candidates as j on j.job_key = w.job_key
    inner join starved_stats as st on st.job_key = w.job_key
    inner join gpu_job_spans as sp on sp.job_key = w.job_key
)

select
    job_key as resource_id,
    -- what a finding about one job calls it (pipelines/catalog/scheduler_names.csv)
    coalesce(
        (select n.job_type from scheduler_names as n where n.scheduler = combined.scheduler),
        (select n.job_type from scheduler_names as n where n.scheduler = '*')
    ) as resource_type,
    provider,
    account_id,
    region_id,
    team,
    project,
    user as owner,
    job_id,
    'waste' as status,
    printf(
        'Job %s%s on %s kept %d×%s waiting on input for %s: %.1f%% mean util in bursts (p95 %.0f%%, σ %.1f), '
        || '%.0f%% of samples idle, %s; the idle %.0f%% of %s%s cost %s %.2f.',
        job_id, coalesce(' (' || job_name || ')', ''), host_text, starved_gpus, gpu_label, runtime_text,
        starved_util_mean, starved_util_p95, starved_util_stddev, 100 * coalesce(starved_idle_share, 0),
        case when starved_power_share is not null
            then printf('%.0f W (%.0f%% of the power limit)', starved_power_w, 100 * starved_power_share)
            else printf('%.0f W', coalesce(starved_power_w, 0)) end,
        100 * waste / gpu_cost,
        case when priced_gpu_hours >= 1 then printf('%.4g GPU-hours', priced_gpu_hours)
            else printf('%.1f GPU-minutes', priced_gpu_hours * 60) end,
        hours_label, waste_currency, waste
    ) as reason,
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
        'gpu_model', gpu_label,
        'starved_gpus', starved_gpus,
        'util_mean_pct', round(starved_util_mean, 2),
        'util_p95_pct', round(starved_util_p95, 2),
        'util_stddev', round(starved_util_stddev, 2),
        'idle_sample_share', round(starved_idle_share, 3),
        'power_mean_w', round(starved_power_w, 1),
        'power_pct_of_limit', round(100 * starved_power_share, 1),
        'mem_max_mib', round(starved_mem_max_mib, 0),
        'mem_total_mib', round(starved_mem_total_mib, 0),
        'priced_gpu_hours', round(priced_gpu_hours, 4),
        'gpu_cost', round(gpu_cost, 2),
        'idle_share_priced', round(waste / gpu_cost, 4),
        'team_source', team_source
    ) as evidence,
    waste::decimal(18, 6) as estimated_waste,
    waste_currency as currency,
    'cost_hourly ÷ GPUs × (1 − util_mean / 100) for each hour of each starved GPU of the job, '
    || 'in hours some GPU of the instance worked' as waste_basis
from combined
order by estimated_waste desc, resource_id
