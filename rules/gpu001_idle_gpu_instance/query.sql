-- GPU001 idle-gpu-instance
-- depends_on: resources, cost_hourly, gpu_hours (marts only)
-- params: $window_start, $window_end, $max_util_pct, $min_idle_hours, $min_coverage
-- An hour of a GPU instance is `idle` when every GPU reported for enough of the hour and none averaged
-- more than max_util_pct; `no_data` when some GPU has no (or too little) telemetry. Idle stretches are
-- followed up to 48 h beyond the window, so a stretch crossing the week's edge is judged by its full
-- length while only its in-week hours are priced (no hour is priced in two weeks).
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
    -- priced in the resource's billing currency only: amounts in two currencies are never added
    inner join gpu_resources as r on r.resource_id = c.resource_id and c.billing_currency = r.currency
    where c.hour >= $window_start::timestamp - interval 48 hour
        and c.hour < $window_end::timestamp + interval 48 hour
    group by c.resource_id, c.hour
    having sum(c.effective_cost) > 0
),

telemetry as (
    select
        resource_id,
        hour,
        -- distinct: one GPU reported under two host names is still one GPU; a NULL util is no data
        count(distinct gpu_id) filter (
            where coverage >= $min_coverage and util_mean is not null
        ) as gpus_observed,
        max(util_mean) filter (where coverage >= $min_coverage) as busiest_gpu_util,
        avg(util_mean) as mean_util,
        avg(power_mean_w) as mean_power_w,
        avg(mem_used_mean_mib) as mean_mem_used_mib
    from gpu_hours
    where resource_id is not null
        and hour >= $window_start::timestamp - interval 48 hour
        and hour < $window_end::timestamp + interval 48 hour
    group by resource_id, hour
),

classified as (
    select
        b.resource_id,
        b.hour,
        b.cost,
        b.currency,
        t.mean_util,
        t.mean_power_w,
        t.mean_mem_used_mib,
        b.hour >= $window_start::timestamp and b.hour < $window_end::timestamp as in_window,
        case
            when t.gpus_observed is null or t.gpus_observed < r.gpu_count then 'no_data'
            when t.busiest_gpu_util <= $max_util_pct then 'idle'
            else 'busy'
        end as state
    from billed as b
    inner join gpu_resources as r on r.resource_id = b.resource_id
    left join telemetry as t on t.resource_id = b.resource_id and t.hour = b.hour
),

idle as (
    select
        *,
        hour - to_hours(row_number() over (partition by resource_id order by hour)) as stretch
    from classified
    where state = 'idle'
),

stretches as (
    select
        resource_id,
        stretch,
        min(hour) as stretch_start,
        max(hour) + interval 1 hour as stretch_end,
        count(*) as stretch_hours
    from idle
    group by resource_id, stretch
),

priced as (
    select
        i.*,
        s.stretch_start,
        s.stretch_end,
        s.stretch_hours
    from idle as i
    inner join stretches as s on s.resource_id = i.resource_id and s.stretch = i.stretch
    where s.stretch_hours >= $min_idle_hours and i.in_window
),

waste as (
    select
        resource_id,
        count(*) as idle_hours,
        sum(cost) as waste,
        count(distinct stretch) as idle_stretches,
        max(stretch_hours) as longest_stretch_hours,
        avg(mean_util) as idle_mean_util,
        avg(mean_power_w) as idle_mean_power_w,
        max(mean_mem_used_mib) as idle_max_mem_used_mib,
        -- sorted (by start) so the evidence is the same on every run
        list_sort(list(distinct {'start': strftime(stretch_start, '%Y-%m-%dT%H:%M:%SZ'),
                                 'end': strftime(stretch_end, '%Y-%m-%dT%H:%M:%SZ'),
                                 'hours': stretch_hours})) as stretches
    from priced
    group by resource_id
),

coverage as (
    select
        resource_id,
        any_value(currency) as currency,
        count(*) as billed_hours,
        sum(cost) as billed_cost,
        count(*) filter (where state = 'no_data') as no_data_hours,
        coalesce(sum(cost) filter (where state = 'no_data'), 0) as no_data_cost
    from classified
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
        w.stretches,
        case
            when coalesce(w.waste, 0) > 0 then 'waste'
            when c.no_data_hours >= $min_idle_hours then 'insufficient_data'
        end as status,
        printf('%d×%s', r.gpu_count, coalesce(r.gpu_model, 'GPU')) as gpus,
        coalesce(r.instance_type, 'GPU instance') as kind_label
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
    null::varchar as job_id,
    status,
    case status
        when 'waste' then printf(
            '%s %s (%s, %s) sat idle for %d of %d billed hours in %d stretch(es) of ≥%d h '
            || '(every GPU ≤%s%% util, mean %.1f%%), costing %s %.2f%s.',
            kind_label, resource_id, coalesce(host, 'no host'), gpus, idle_hours, billed_hours,
            idle_stretches, $min_idle_hours, $max_util_pct::varchar, coalesce(idle_mean_util, 0), currency,
            waste,
            case when no_data_hours > 0
                then printf('; %d billed hours had no telemetry', no_data_hours) else '' end
        )
        else printf(
            '%d of %d billed hours of %s %s (%s, %s) have no GPU telemetry (%s %.2f): '
            || 'cannot tell whether its GPUs were idle.',
            no_data_hours, billed_hours, kind_label, resource_id, coalesce(host, 'no host'), gpus,
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
        'idle_hours', idle_hours,
        'idle_stretches', idle_stretches,
        'longest_stretch_hours', longest_stretch_hours,
        'idle_mean_util_pct', round(idle_mean_util, 2),
        'idle_mean_power_w', round(idle_mean_power_w, 1),
        'idle_max_mem_used_mib', round(idle_max_mem_used_mib, 0),
        'hours_without_telemetry', no_data_hours,
        'cost_without_telemetry', round(no_data_cost, 2),
        'stretches', stretches[1:20]
    ) as evidence,
    (case when status = 'waste' then waste else 0 end)::decimal(18, 6) as estimated_waste,
    currency,
    printf(
        'effective cost (cost_hourly) of the billed hours in idle stretches of at least %d consecutive hours',
        $min_idle_hours
    ) as waste_basis
from combined
where status is not null
order by estimated_waste desc, resource_id
