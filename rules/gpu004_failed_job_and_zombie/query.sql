-- GPU004 failed-job-and-zombie
-- depends_on: resources, gpu_billed_hours, gpu_job_hours, jobs_enriched, storage_checkpoints (marts only)
-- params: $window_start, $window_end, $min_zombie_hours
-- Two kinds of finding. A failed job (FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL,
-- DEADLINE): the cost of its GPU-slices in the window, only the part after its last checkpoint when one
-- is known (the job record's last_checkpoint_at, else the newest checkpoint of the job's run that
-- storage_checkpoints saw written while the job ran) (resource_id = the job's key). A zombie instance: billed hours after the last job
-- on it ended, with no job running and no GPU telemetry at all, in stretches of at least
-- min_zombie_hours (followed 48 h past the window's edges, priced for the window's hours;
-- resource_id = the instance). Hours after a job with telemetry that shows idle GPUs are GPU001's, so
-- the two rules never price the same hour. `priced_units` is what this rule puts a price on.
with gpu_resources as (
    select *
    from resources
    where gpu_count > 0
),

billed as (
    select *
    from gpu_billed_hours
    where hour >= $window_start::timestamp - interval 48 hour
        and hour < $window_end::timestamp + interval 48 hour
),

failed_records as (
    select *
    from jobs_enriched
    where state in ('FAILED', 'CANCELLED', 'TIMEOUT', 'OUT_OF_MEMORY', 'NODE_FAIL', 'BOOT_FAIL', 'DEADLINE')
        and (started_at is null or started_at < $window_end::timestamp)
        and (ended_at is null or ended_at > $window_start::timestamp)
),

written_checkpoints as (
    -- the newest checkpoint of the job's run written while the job ran (object storage inventories)
    select
        j.job_key,
        max(c.last_modified) as last_checkpoint_at
    from failed_records as j
    inner join storage_checkpoints as c
        on list_contains(c.run_job_ids, j.job_id)
        and c.last_modified >= j.started_at
        and c.last_modified <= coalesce(j.ended_at, 'infinity'::timestamp)
    where c.step is not null
    group by j.job_key
),

failed_jobs as (
    select
        j.* replace (coalesce(j.last_checkpoint_at, w.last_checkpoint_at) as last_checkpoint_at),
        case
            when j.last_checkpoint_at is not null then 'job record'
            when w.last_checkpoint_at is not null then 'storage inventory'
        end as checkpoint_source
    from failed_records as j
    left join written_checkpoints as w on w.job_key = j.job_key
),

failed_slices as (
    select
        s.*,
        -- the part of the slice after the job's last checkpoint (the whole slice when none is known)
        greatest(
            epoch(s.slice_end) - epoch(greatest(s.slice_start, coalesce(j.last_checkpoint_at, s.slice_start))), 0
        ) as lost_s
    from gpu_job_hours as s
    inner join failed_jobs as j on j.job_key = s.job_key
    where s.resource_id is not null
        and s.hour >= $window_start::timestamp and s.hour < $window_end::timestamp
    -- a GPU reported under two host names (node name and FQDN) is one GPU
    qualify row_number() over (partition by s.resource_id, s.gpu_id, s.slice_start order by s.host) = 1
),

failed_units as (
    select
        s.resource_id,
        s.hour,
        s.slice_start,
        s.slice_end,
        s.gpu_id,
        s.job_key,
        b.currency,
        s.slice_seconds / 3600 as gpu_hours,
        s.lost_s / 3600 as lost_gpu_hours,
        s.util_mean,
        s.util_samples,
        s.gpu_model,
        b.cost / greatest(r.gpu_count, coalesce(r.gpus_reporting, 0)) * s.lost_s / 3600 as cost
    from failed_slices as s
    inner join billed as b on b.resource_id = s.resource_id and b.hour = s.hour
    inner join gpu_resources as r on r.resource_id = s.resource_id
),

resource_jobs as (
    select
        u.resource_id,
        j.job_key,
        j.job_id,
        j.started_at,
        coalesce(j.ended_at, 'infinity'::timestamp) as ended_at
    from jobs_enriched as j, unnest(j.resource_ids) as u(resource_id)
    where j.started_at is not null
),

observed as (
    select distinct
        resource_id,
        hour
    from gpu_job_hours
    where resource_id is not null
        and hour >= $window_start::timestamp - interval 48 hour
        and hour < $window_end::timestamp + interval 48 hour
),

idle_billed as (
    -- billed hours with no telemetry at all and no job running in any part of them
    select b.*
    from billed as b
    where not exists (
        select 1 from observed as o where o.resource_id = b.resource_id and o.hour = b.hour
    )
        and not exists (
            select 1
            from resource_jobs as rj
            where rj.resource_id = b.resource_id
                and rj.started_at < b.hour + interval 1 hour
                and rj.ended_at > b.hour
        )
),

zombie_hours as (
    select
        i.resource_id,
        i.hour,
        i.cost,
        i.currency,
        max(rj.ended_at) as last_job_ended_at,
        arg_max(rj.job_id, rj.ended_at) as last_job_id
    from idle_billed as i
    inner join resource_jobs as rj on rj.resource_id = i.resource_id and rj.ended_at <= i.hour
    group by i.resource_id, i.hour, i.cost, i.currency
),

zombie_islands as (
    select
        *,
        hour - to_hours(row_number() over (partition by resource_id order by hour)) as island
    from zombie_hours
),

zombie_stretches as (
    select
        resource_id,
        island,
        min(hour) as stretch_start,
        max(hour) + interval 1 hour as stretch_end,
        count(*) as stretch_hours
    from zombie_islands
    group by resource_id, island
),

zombie_units as (
    select
        z.resource_id,
        z.hour,
        z.hour as slice_start,
        z.hour + interval 1 hour as slice_end,
        null::varchar as gpu_id,
        null::varchar as job_key,
        z.currency,
        z.cost,
        z.last_job_id,
        z.last_job_ended_at,
        s.island,
        s.stretch_start,
        s.stretch_end,
        s.stretch_hours
    from zombie_islands as z
    inner join zombie_stretches as s on s.resource_id = z.resource_id and s.island = z.island
    where s.stretch_hours >= $min_zombie_hours - 1e-9
        and z.hour >= $window_start::timestamp and z.hour < $window_end::timestamp
),

priced_units as (
    select resource_id, hour, slice_start, slice_end, gpu_id, job_key, currency, cost from failed_units
    where cost > 0
    union all
    select resource_id, hour, slice_start, slice_end, gpu_id, job_key, currency, cost from zombie_units
),

failed_waste as (
    select
        u.job_key,
        mode(u.currency) as currency,
        count(distinct u.gpu_id) as gpus,
        sum(u.gpu_hours) as gpu_hours,
        sum(u.lost_gpu_hours) as lost_gpu_hours,
        sum(u.util_mean * u.util_samples) / nullif(sum(u.util_samples), 0) as util_mean,
        any_value(u.gpu_model) as gpu_model,
        list(distinct u.resource_id) as resource_ids
    from failed_units as u
    group by u.job_key
),

failed_findings as (
    select
        j.job_key as resource_id,
        case j.scheduler when 'slurm' then 'Slurm job' when 'kubernetes' then 'Kubernetes pod' else 'job' end
            as resource_type,
        j.provider,
        j.account_id,
        j.region_id,
        j.team,
        j.project,
        j.user as owner,
        j.job_id,
        w.currency,
        (select sum(u.cost) from failed_units as u where u.job_key = w.job_key and u.currency = w.currency)
            as waste,
        printf(
            'Job %s%s %s%s after %s on %s: %d×%s at %.1f%% mean util for %s%s bought no result, '
            || 'costing %s %.2f.',
            j.job_id, coalesce(' (' || j.job_name || ')', ''),
            case j.state
                when 'CANCELLED' then 'was cancelled'
                when 'TIMEOUT' then 'hit its time limit'
                when 'OUT_OF_MEMORY' then 'ran out of memory'
                when 'NODE_FAIL' then 'lost its node'
                else 'failed'
            end,
            case when j.state_raw is not null and lower(j.state_raw) <> lower(j.state)
                then ' (' || j.state_raw || ')' else '' end,
            case
                when j.runtime_s >= 3600 then printf('%.1f h', j.runtime_s / 3600)
                when j.runtime_s >= 60 then printf('%.0f min', j.runtime_s / 60)
                else printf('%.0f s', coalesce(j.runtime_s, 0))
            end,
            coalesce(array_to_string(j.hosts, ', '), array_to_string(w.resource_ids, ', ')),
            w.gpus, regexp_replace(coalesce(w.gpu_model, 'GPU'), '^NVIDIA\s+', ''), coalesce(w.util_mean, 0),
            (case when w.gpu_hours >= 1 then printf('%.4g GPU-hours', w.gpu_hours)
                else printf('%.1f GPU-minutes', w.gpu_hours * 60) end)
            -- GPU-hours priced by a `pricing:` cost model are named so (a bill's are plain GPU-hours)
            || (select case string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis)
            when 'owned' then ' (modelled hours, owned)'
            when 'contract' then ' (contract hours)'
            when 'bill' then ''
            else coalesce(' (' || string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis) || ' hours)', '')
        end from resources as r where list_contains(w.resource_ids, r.resource_id)),
            case when j.last_checkpoint_at is not null
                then printf('; the %s since its last checkpoint at %s UTC',
                    case when w.lost_gpu_hours >= 1 then printf('%.4g GPU-hours', w.lost_gpu_hours)
                        else printf('%.1f GPU-minutes', w.lost_gpu_hours * 60) end,
                    strftime(j.last_checkpoint_at, '%Y-%m-%d %H:%M'))
                else '' end,
            w.currency,
            (select sum(u.cost) from failed_units as u where u.job_key = w.job_key and u.currency = w.currency)
        ) as reason,
        json_object(
            'kind', 'failed_job',
            'job_id', j.job_id,
            'job_name', j.job_name,
            'user', j.user,
            'state', j.state,
            'state_raw', j.state_raw,
            'exit_code', j.exit_code,
            'started_at', strftime(j.started_at, '%Y-%m-%dT%H:%M:%SZ'),
            'ended_at', strftime(j.ended_at, '%Y-%m-%dT%H:%M:%SZ'),
            'runtime_hours', round(j.runtime_s / 3600, 4),
            'last_checkpoint_at', strftime(j.last_checkpoint_at, '%Y-%m-%dT%H:%M:%SZ'),
            'checkpoint_source', j.checkpoint_source,
            'hosts', j.hosts,
            'resource_ids', w.resource_ids,
            'gpus', w.gpus,
            'util_mean_pct', round(w.util_mean, 2),
            'gpu_hours', round(w.gpu_hours, 4),
            'lost_gpu_hours', round(w.lost_gpu_hours, 4),
            'team_source', j.team_source
        ) as evidence,
        'cost_hourly ÷ GPUs × the GPU-hours of the failed job in the week (after its last checkpoint when '
        || 'known)' as waste_basis
    from failed_waste as w
    inner join failed_jobs as j on j.job_key = w.job_key
),

zombie_waste as (
    select
        resource_id,
        any_value(currency) as currency,
        sum(cost) as waste,
        count(*) as zombie_hours,
        count(distinct island) as stretches_count,
        max(stretch_hours) as longest_stretch_hours,
        arg_min(last_job_id, hour) as last_job_id,
        min(last_job_ended_at) as last_job_ended_at,
        list_sort(list(distinct {'start': strftime(stretch_start, '%Y-%m-%dT%H:%M:%SZ'),
                                 'end': strftime(stretch_end, '%Y-%m-%dT%H:%M:%SZ'),
                                 'hours': stretch_hours,
                                 'after_job': last_job_id})) as stretches
    from zombie_units
    group by resource_id
),

zombie_findings as (
    select
        r.resource_id,
        coalesce(r.resource_type, 'GPU instance') as resource_type,
        r.provider,
        r.account_id,
        r.region_id,
        r.team,
        r.project,
        r.owner,
        z.last_job_id as job_id,
        z.currency,
        z.waste,
        printf(
            '%s %s (%s, %d×%s) %s with no job running and no GPU telemetry after job %s '
            || 'ended (%s UTC), in %d stretch(es) of ≥%s h, costing %s %.2f.',
            coalesce(
                r.instance_type, case when r.pricing_basis in ('owned', 'contract') then 'GPU host' end, 'GPU instance'
            ),
            r.resource_id, coalesce(r.host, 'no host'), r.gpu_count,
            coalesce(r.gpu_model, 'GPU'),
            case r.pricing_basis
                when 'owned' then printf('ran up %d modelled hours (owned)', z.zombie_hours)
                when 'contract' then printf('ran up %d contract hours', z.zombie_hours)
                else printf('was billed %d hours', z.zombie_hours)
            end,
            z.last_job_id,
            strftime(z.last_job_ended_at, '%Y-%m-%d %H:%M'), z.stretches_count,
            printf('%g', $min_zombie_hours::double), z.currency, z.waste
        ) as reason,
        json_object(
            'kind', 'zombie',
            'instance_type', r.instance_type,
            'host', r.host,
            'gpu_count', r.gpu_count,
            'zombie_hours', z.zombie_hours,
            'zombie_stretches', z.stretches_count,
            'longest_stretch_hours', z.longest_stretch_hours,
            'last_job_id', z.last_job_id,
            'last_job_ended_at', strftime(z.last_job_ended_at, '%Y-%m-%dT%H:%M:%SZ'),
            'stretches', z.stretches[1:20]
        ) as evidence,
        printf(
            'effective cost (cost_hourly) of billed hours after the last job ended, with no job and no GPU '
            || 'telemetry, in stretches of at least %s hours', printf('%g', $min_zombie_hours::double)
        ) as waste_basis
    from zombie_waste as z
    inner join gpu_resources as r on r.resource_id = z.resource_id
),

findings as (
    select * from failed_findings
    union all by name
    select * from zombie_findings
)

select
    resource_id,
    resource_type,
    provider,
    account_id,
    region_id,
    team,
    project,
    owner,
    job_id,
    'waste' as status,
    reason,
    evidence,
    waste::decimal(18, 6) as estimated_waste,
    currency,
    waste_basis
from findings
where waste > 0
order by estimated_waste desc, resource_id
