-- GPU001 idle-gpu-instance
-- depends_on: resources, gpu_billed_hours, gpu_job_hours, gpu_claims (marts only)
-- params: $window_start, $window_end, $max_util_pct, $min_idle_hours, $min_coverage, $max_power_pct,
--         $max_mem_util_pct, $claim_thresholds
-- Units are the slices of a billed resource-hour (gpu_job_hours splits an hour where a job starts or
-- ends on the host; a billed hour without any telemetry is one unit). A unit is `idle` when every GPU
-- reported for enough of it and none averaged more than max_util_pct (SM activity counts as util when
-- DCGM reports it), drew more than max_power_pct of its power limit, or kept its memory controller
-- busier than max_mem_util_pct (memory held is not work: a parked notebook is idle); `no_data` when
-- some GPU has no (or too little) telemetry; `failed_job` when a failed, cancelled or OOM job ran on a
-- GPU in it (gpu_claims gives those to GPU004). Only units this rule claims in gpu_claims (every GPU at
-- or under max_util_pct) can be idle. Idle stretches are followed up to 48 h beyond the window, so a
-- stretch crossing the week's edge is judged by its full length while only its in-week units are
-- priced (no hour is priced in two weeks). `priced_units` is what this rule puts a price on.
with gpu_resources as (
    select *
    from resources
    where gpu_count > 0
),

billed as (
    -- priced in the resource's billing currency only (gpu_billed_hours never adds two currencies)
    select *
    from gpu_billed_hours
    where hour >= $window_start::timestamp - interval 48 hour
        and hour < $window_end::timestamp + interval 48 hour
),

telemetry as (
    select
        resource_id,
        hour,
        slice_start,
        max(slice_end) as slice_end,
        -- distinct: one GPU reported under two host names is still one GPU; a NULL util is no data
        count(distinct gpu_id) filter (
            where coverage >= $min_coverage and util_mean is not null
        ) as gpus_observed,
        max(greatest(util_mean, 100 * sm_active_mean)) filter (where coverage >= $min_coverage)
            as busiest_gpu_util,
        coalesce(bool_or(
            power_mean_w > $max_power_pct / 100 * power_limit_w
        ) filter (where coverage >= $min_coverage), false) as power_busy,
        coalesce(bool_or(mem_util_mean > $max_mem_util_pct) filter (where coverage >= $min_coverage), false)
            as memory_busy,
        avg(util_mean) as mean_util,
        avg(power_mean_w) as mean_power_w,
        avg(mem_used_mean_mib) as mean_mem_used_mib,
        max(mem_total_mib) as mem_total_mib,
        list(distinct job_id) filter (where job_id is not null) as jobs
    from gpu_job_hours
    where resource_id is not null
        and hour >= $window_start::timestamp - interval 48 hour
        and hour < $window_end::timestamp + interval 48 hour
    group by resource_id, hour, slice_start
),

claims as (
    -- who claims each part of an hour (gpu_claims): GPU004 a failed job's GPUs, this rule an idle instance
    select
        resource_id,
        hour,
        slice_start,
        coalesce(bool_or(claimed_by = 'GPU004'), false) as failed_job,
        coalesce(bool_or(claimed_by = 'GPU001'), false) as idle_claimed
    from (
        select resource_id, hour, slice_start, claimed_by(claims, $claim_thresholds) as claimed_by
        from gpu_claims
        where gpu_id is not null
            and hour >= $window_start::timestamp - interval 48 hour
            and hour < $window_end::timestamp + interval 48 hour
    )
    group by resource_id, hour, slice_start
),

units as (
    select
        b.resource_id,
        b.hour,
        coalesce(t.slice_start, b.hour) as unit_start,
        coalesce(t.slice_end, b.hour + interval 1 hour) as unit_end,
        (epoch(coalesce(t.slice_end, b.hour + interval 1 hour)) - epoch(coalesce(t.slice_start, b.hour)))
        / 3600 as unit_hours,
        b.cost * (
            epoch(coalesce(t.slice_end, b.hour + interval 1 hour)) - epoch(coalesce(t.slice_start, b.hour))
        ) / 3600 as cost,
        b.currency,
        t.mean_util,
        t.mean_power_w,
        t.mean_mem_used_mib,
        t.mem_total_mib,
        t.jobs,
        b.hour >= $window_start::timestamp and b.hour < $window_end::timestamp as in_window,
        case
            when c.failed_job then 'failed_job'
            when t.gpus_observed is null or t.gpus_observed < r.gpu_count then 'no_data'
            when t.busiest_gpu_util <= $max_util_pct and not t.power_busy and not t.memory_busy and c.idle_claimed
                then 'idle'
            else 'busy'
        end as state
    from billed as b
    inner join gpu_resources as r on r.resource_id = b.resource_id
    left join telemetry as t on t.resource_id = b.resource_id and t.hour = b.hour
    left join claims as c on c.resource_id = t.resource_id and c.hour = t.hour and c.slice_start = t.slice_start
),

ordered as (
    select
        *,
        lag(hour) over (partition by resource_id order by unit_start) as previous_hour
    from units
),

islands as (
    -- a new island starts at every unit that is not idle and after every unbilled hour
    select
        *,
        sum(case
            when state <> 'idle' then 1
            when previous_hour is null or hour > previous_hour + interval 1 hour then 1
            else 0
        end) over (
            partition by resource_id order by unit_start rows between unbounded preceding and current row
        ) as island
    from ordered
),

stretches as (
    select
        resource_id,
        island,
        min(unit_start) as stretch_start,
        max(unit_end) as stretch_end,
        (epoch(max(unit_end)) - epoch(min(unit_start))) / 3600 as stretch_hours,
        list_sort(list_distinct(flatten(list(coalesce(jobs, []))))) as stretch_jobs
    from islands
    where state = 'idle'
    group by resource_id, island
),

idle_units as (
    -- the idle units of stretches long enough to count, in the window (for the evidence)
    select
        i.*,
        s.stretch_hours
    from islands as i
    inner join stretches as s on s.resource_id = i.resource_id and s.island = i.island
    where i.state = 'idle' and s.stretch_hours >= $min_idle_hours - 1e-9 and i.in_window
),

counted_stretches as (
    select *
    from stretches
    where stretch_hours >= $min_idle_hours - 1e-9
),

priced_units as (
    -- a stretch is priced by the billed time it spans (a few seconds between two parts of an hour
    -- that no sample fell in belong to the stretch around them); in-window hours only
    select
        b.resource_id,
        b.hour,
        greatest(b.hour, s.stretch_start) as slice_start,
        least(b.hour + interval 1 hour, s.stretch_end) as slice_end,
        null::varchar as gpu_id,
        null::varchar as job_key,
        b.cost * (epoch(least(b.hour + interval 1 hour, s.stretch_end)) - epoch(greatest(b.hour, s.stretch_start)))
        / 3600 as cost,
        (epoch(least(b.hour + interval 1 hour, s.stretch_end)) - epoch(greatest(b.hour, s.stretch_start)))
        / 3600 as unit_hours,
        b.currency,
        s.island
    from counted_stretches as s
    inner join billed as b
        on b.resource_id = s.resource_id and b.hour < s.stretch_end and b.hour + interval 1 hour > s.stretch_start
    where b.hour >= $window_start::timestamp and b.hour < $window_end::timestamp
),

priced as (
    select
        resource_id,
        sum(unit_hours) as idle_hours,
        sum(cost) as waste,
        count(distinct island) as idle_stretches
    from priced_units
    group by resource_id
),

waste as (
    select
        u.resource_id,
        p.idle_hours,
        p.waste,
        p.idle_stretches,
        max(u.stretch_hours) as longest_stretch_hours,
        sum(u.mean_util * u.unit_hours) / sum(u.unit_hours) as idle_mean_util,
        sum(u.mean_power_w * u.unit_hours) / sum(u.unit_hours) as idle_mean_power_w,
        max(u.mean_mem_used_mib) as idle_max_mem_used_mib,
        max(u.mean_mem_used_mib / nullif(u.mem_total_mib, 0)) as idle_max_mem_used_share,
        list_sort(list_distinct(flatten(list(coalesce(u.jobs, []))))) as idle_jobs,
        -- sorted (by start) so the evidence is the same on every run
        list_sort(list(distinct {'start': strftime(s.stretch_start, '%Y-%m-%dT%H:%M:%SZ'),
                                 'end': strftime(s.stretch_end, '%Y-%m-%dT%H:%M:%SZ'),
                                 'hours': round(s.stretch_hours, 4),
                                 'jobs': s.stretch_jobs})) as stretches
    from idle_units as u
    inner join stretches as s on s.resource_id = u.resource_id and s.island = u.island
    inner join priced as p on p.resource_id = u.resource_id
    group by u.resource_id, p.idle_hours, p.waste, p.idle_stretches
),

coverage as (
    select
        resource_id,
        any_value(currency) as currency,
        count(distinct hour) as billed_hours,
        sum(cost) as billed_cost,
        coalesce(sum(unit_hours) filter (where state = 'no_data'), 0) as no_data_hours,
        coalesce(sum(cost) filter (where state = 'no_data'), 0) as no_data_cost
    from units
    where in_window
    group by resource_id
),

combined as (
    select
        r.*,
        c.currency,
        c.billed_hours,
        c.billed_cost,
        c.no_data_hours,
        c.no_data_cost,
        coalesce(w.idle_hours, 0) as idle_hours,
        coalesce(w.waste, 0) as waste,
        coalesce(w.idle_stretches, 0) as idle_stretches,
        w.longest_stretch_hours,
        w.idle_mean_util,
        w.idle_mean_power_w,
        w.idle_max_mem_used_mib,
        w.idle_max_mem_used_share,
        coalesce(w.idle_jobs, []) as idle_jobs,
        w.stretches,
        case
            when coalesce(w.waste, 0) > 0 then 'waste'
            when c.no_data_hours >= $min_idle_hours then 'insufficient_data'
        end as status,
        printf('%d×%s', r.gpu_count, coalesce(r.gpu_model, 'GPU')) as gpus,
        coalesce(r.instance_type, case when r.pricing_basis in ('owned', 'contract') then 'GPU host' end, 'GPU instance')
            as kind_label,
        -- what the hours are: a bill's, or a `pricing:` cost model's (never called billed)
        case r.pricing_basis
            when 'owned' then 'modelled hours (owned)'
            when 'contract' then 'contract hours'
            else 'billed hours'
        end as hours_label,
        case r.pricing_basis
            when 'owned' then 'modelled time (owned)'
            when 'contract' then 'contract time'
            else 'billed time'
        end as time_label,
        -- durations: whole hours as integers, other hours with one decimal, under an hour in minutes
        case
            when coalesce(w.idle_hours, 0) = round(coalesce(w.idle_hours, 0)) then printf('%d', w.idle_hours::bigint)
            when w.idle_hours >= 1 then printf('%.1f', w.idle_hours)
            else printf('%.1f min', w.idle_hours * 60)
        end as idle_text,
        case
            when c.no_data_hours = round(c.no_data_hours) then printf('%d', c.no_data_hours::bigint)
            when c.no_data_hours >= 1 then printf('%.1f', c.no_data_hours)
            else printf('%.1f min', c.no_data_hours * 60)
        end as no_data_text
    from coverage as c
    inner join gpu_resources as r on r.resource_id = c.resource_id
    left join waste as w on w.resource_id = c.resource_id
)

select
    resource_id,
    coalesce(resource_type, 'GPU instance') as resource_type,
    provider,
    account_id,
    region_id,
    team,
    project,
    owner,
    case when len(idle_jobs) = 1 then idle_jobs[1] end as job_id,
    status,
    case status
        when 'waste' then printf(
            '%s %s (%s, %s) sat idle for %s of %d %s in %d stretch(es) of ≥%s h '
            || '(every GPU ≤%s%% util, mean %.1f%%, %.0f W)%s%s, costing %s %.2f%s.',
            kind_label, resource_id, coalesce(host, 'no host'), gpus, idle_text, billed_hours, hours_label,
            idle_stretches, printf('%g', $min_idle_hours::double), $max_util_pct::varchar, coalesce(idle_mean_util, 0),
            coalesce(idle_mean_power_w, 0),
            case when idle_max_mem_used_share >= 0.5
                then printf(' while holding %s MiB (%.0f%%) of GPU memory',
                    printf('%,d', idle_max_mem_used_mib::bigint), 100 * idle_max_mem_used_share)
                else '' end,
            case when len(idle_jobs) > 0
                then ' during job(s) ' || array_to_string(idle_jobs[1:5], ', ')
                    || case when len(idle_jobs) > 5 then printf(' and %d more', len(idle_jobs) - 5) else '' end
                else '' end,
            currency, waste,
            case
                when no_data_hours >= 1 then printf('; %s %s had no telemetry', no_data_text, hours_label)
                when no_data_hours > 0 then printf('; %s of %s had no telemetry', no_data_text, time_label)
                else ''
            end
        )
        else printf(
            '%s of %d %s of %s %s (%s, %s) have no GPU telemetry (%s %.2f): '
            || 'cannot tell whether its GPUs were idle.',
            no_data_text, billed_hours, hours_label, kind_label, resource_id, coalesce(host, 'no host'), gpus,
            currency, no_data_cost
        )
    end as reason,
    json_object(
        'instance_type', instance_type,
        'host', host,
        'gpu_model', gpu_model,
        'gpu_count', gpu_count,
        'billed_hours', billed_hours,
        'billed_cost', round(billed_cost, 2),
        'idle_hours', round(idle_hours, 4),
        'idle_stretches', idle_stretches,
        'longest_stretch_hours', round(longest_stretch_hours, 4),
        'idle_mean_util_pct', round(idle_mean_util, 2),
        'idle_mean_power_w', round(idle_mean_power_w, 1),
        'idle_max_mem_used_mib', round(idle_max_mem_used_mib, 0),
        'idle_max_mem_used_pct', round(100 * idle_max_mem_used_share, 1),
        'idle_jobs', idle_jobs,
        'hours_without_telemetry', round(no_data_hours, 4),
        'cost_without_telemetry', round(no_data_cost, 2),
        'stretches', stretches[1:20]
    ) as evidence,
    (case when status = 'waste' then waste else 0 end)::decimal(18, 6) as estimated_waste,
    currency,
    printf(
        'effective cost (cost_hourly) of the billed hours in idle stretches of at least %s consecutive hours',
        printf('%g', $min_idle_hours::double)
    ) as waste_basis
from combined
where status is not null
order by estimated_waste desc, resource_id
