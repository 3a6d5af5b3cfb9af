-- GPU005 low-efficiency-job
-- depends_on: job_mfu, job_mfu_hourly, jobs_enriched, gpu_job_spans, gpu_job_hours, gpu_billed_hours,
--             resources, gpu_claims (marts only)
-- params: $window_start, $window_end, $floor, $team_floors, $size_floors, $min_low_minutes, $stall_share,
--         $low_power_share, $busy_util_pct, $claim_thresholds
-- A job is low when its measured median MFU is below its floor and its hours below the floor cover at
-- least min_low_minutes of logged time. Its in-week GPU-slices are priced at (1 - MFU / floor) of their
-- cost where gpu_claims gives them to this rule, which comes last: never a failed job (GPU004: gpu_job_spans
-- holds none), only parts of hours some GPU of the instance worked (GPU001 has the rest), never a GPU another
-- GPU rule claims (GPU002, GPU003: named in the finding). `priced_units` is what this rule prices.
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

team_floors as (
    select unnest($team_floors::struct(team varchar, floor double)[], recursive := true)
),

size_floors as (
    select unnest($size_floors::struct(min_params double, floor double)[], recursive := true)
),

measured as (
    -- jobs that did not fail, ran in the window and have a measured MFU, with their floor
    select
        m.*,
        coalesce(
            (select t.floor from team_floors as t where t.team = m.team),
            (select s.floor from size_floors as s where s.min_params <= m.params order by s.min_params desc limit 1),
            $floor
        ) as job_floor,
        sp.runtime_s
    from job_mfu as m
    inner join gpu_job_spans as sp on sp.job_key = m.job_key
    where m.mfu is not null
        and (m.started_at is null or m.started_at < $window_end::timestamp)
        and (m.ended_at is null or m.ended_at > $window_start::timestamp)
),

low_jobs as (
    select
        m.*,
        sum(h.logged_s) filter (where h.mfu < m.job_floor) as low_seconds
    from measured as m
    inner join job_mfu_hourly as h on h.job_key = m.job_key
    where m.mfu < m.job_floor
    group by all
    having sum(h.logged_s) filter (where h.mfu < m.job_floor) >= $min_low_minutes * 60
),

job_slices as (
    -- a GPU reported under two host names (node name and FQDN) is one GPU
    select s.*
    from gpu_job_hours as s
    inner join low_jobs as j on j.job_key = s.job_key
    where s.resource_id is not null
    qualify row_number() over (partition by s.resource_id, s.gpu_id, s.slice_start order by s.host) = 1
),

claims as (
    -- who claims each in-week GPU-slice of the low jobs (gpu_claims); a part of an hour in which every GPU
    -- of the instance idled is GPU001's and not the job's, so it is left out
    select
        c.resource_id,
        c.hour,
        c.slice_start,
        c.gpu_id,
        c.job_key,
        c.claimed_by
    from (
        select g.*, claimed_by(g.claims, $claim_thresholds) as claimed_by
        from gpu_claims as g
        inner join low_jobs as j on j.job_key = g.job_key
        where g.hour >= $window_start::timestamp and g.hour < $window_end::timestamp
    ) as c
    where c.claimed_by <> 'GPU001'
),

slice_costs as (
    select
        s.resource_id,
        s.hour,
        s.slice_start,
        s.slice_end,
        s.gpu_id,
        s.job_key,
        nullif(c.claimed_by, 'GPU005') as claimed_by,
        b.currency,
        s.slice_seconds / 3600 as gpu_hours,
        -- per GPU: the instance-hour's cost over its GPUs (more if the telemetry saw more than billed)
        b.cost / greatest(r.gpu_count, coalesce(r.gpus_reporting, 0)) * s.slice_seconds / 3600 as gpu_cost,
        greatest(1 - j.mfu / j.job_floor, 0) as shortfall
    from job_slices as s
    inner join low_jobs as j on j.job_key = s.job_key
    inner join claims as c
        on c.resource_id = s.resource_id and c.hour = s.hour and c.slice_start = s.slice_start
        and c.gpu_id = s.gpu_id and c.job_key = s.job_key
    inner join billed as b on b.resource_id = s.resource_id and b.hour = s.hour
    inner join gpu_resources as r on r.resource_id = s.resource_id
    where s.hour >= $window_start::timestamp and s.hour < $window_end::timestamp
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
        gpu_hours,
        gpu_cost,
        gpu_cost * shortfall as cost
    from slice_costs
    where claimed_by is null
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
        coalesce(sum(u.gpu_cost), 0) as gpu_cost,
        coalesce(sum(u.gpu_hours), 0) as priced_gpu_hours,
        (select list(distinct sc.claimed_by order by sc.claimed_by) from slice_costs as sc
            where sc.job_key = j.job_key and sc.claimed_by is not null) as claimed_by,
        (select count(*) from slice_costs as sc where sc.job_key = j.job_key) as billed_slices
    from low_jobs as j
    left join job_currency as c on c.job_key = j.job_key
    left join priced_units as u on u.job_key = j.job_key and u.currency = c.currency
    group by j.job_key, c.currency
),

combined as (
    select
        j.*,
        w.currency as waste_currency,
        w.waste,
        w.gpu_cost,
        w.priced_gpu_hours,
        w.claimed_by,
        w.billed_slices,
        e.provider,
        e.account_id,
        e.region_id,
        e.hosts,
        e.resource_ids,
        e.team_source,
        case
            when greatest(coalesce(j.outside_step_share, 0), coalesce(j.data_share, 0)) >= $stall_share then printf(
                'input stalls (%.0f%% of the wall clock outside training steps)',
                100 * greatest(coalesce(j.outside_step_share, 0), coalesce(j.data_share, 0))
            )
            when j.power_share < $low_power_share then printf(
                'low power (%.0f W, %.0f%% of the power limit)', j.power_mean_w, 100 * j.power_share
            )
            when j.util_mean >= $busy_util_pct then printf(
                'memory-bound (%.0f%% utilisation, few FLOPs)', j.util_mean
            )
            else 'none visible in telemetry'
        end as cause,
        case
            when greatest(coalesce(j.outside_step_share, 0), coalesce(j.data_share, 0)) >= $stall_share
                then 'input_stalls'
            when j.power_share < $low_power_share then 'low_power'
            when j.util_mean >= $busy_util_pct then 'memory_bound'
        end as cause_code,
        coalesce(array_to_string(e.hosts, ', '), array_to_string(e.resource_ids, ', '), 'its hosts') as host_text,
        -- GPU-hours priced by a `pricing:` cost model are named so (a bill's are plain GPU-hours)
        (select case string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis)
            when 'owned' then ' (modelled hours, owned)'
            when 'contract' then ' (contract hours)'
            when 'bill' then ''
            else coalesce(' (' || string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis) || ' hours)', '')
        end from resources as r where list_contains(e.resource_ids, r.resource_id)) as hours_label,
        case
            when j.params >= 1e9 then printf('%.1fB', j.params / 1e9)
            else printf('%.0fM', j.params / 1e6)
        end as params_text,
        case
            when j.low_seconds >= 3600 then printf('%.1f h', j.low_seconds / 3600)
            when j.low_seconds >= 60 then printf('%.1f min', j.low_seconds / 60)
            else printf('%.0f s', j.low_seconds)
        end as low_text
    from low_jobs as j
    inner join waste as w on w.job_key = j.job_key
    inner join jobs_enriched as e on e.job_key = j.job_key
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
    owner,
    job_id,
    case
        when waste > 0 then 'waste'
        when len(claimed_by) > 0 then 'suspect'
        else 'insufficient_data'
    end as status,
    printf(
        'Job %s%s on %s trained its %s-parameter model at %.1f%% MFU (median of %d log intervals on %d×%s; '
        || 'floor %.0f%%) for %s; likeliest cause: %s; %s',
        job_id, coalesce(' (' || job_name || ')', ''), host_text, params_text, 100 * mfu,
        intervals, gpus, gpu_model, 100 * job_floor, low_text, cause,
        case
            when waste > 0 then printf(
                'the shortfall, %.0f%% of %s%s, cost %s %.2f.', 100 * (1 - mfu / job_floor),
                case when priced_gpu_hours >= 1 then printf('%.1f GPU-hours', priced_gpu_hours)
                    else printf('%.1f GPU-minutes', priced_gpu_hours * 60) end,
                hours_label,
                waste_currency, waste
            )
            when len(claimed_by) > 0 then printf(
                'its GPU-hours are priced by %s, so GPU005 adds nothing.', array_to_string(claimed_by, ' and ')
            )
            else 'no billed or priced GPU-hour of the job in the week: nothing to price.'
        end
    ) as reason,
    json_object(
        'job_id', job_id,
        'job_name', job_name,
        'state', state,
        'started_at', strftime(started_at, '%Y-%m-%dT%H:%M:%SZ'),
        'ended_at', strftime(ended_at, '%Y-%m-%dT%H:%M:%SZ'),
        'hosts', hosts,
        'resource_ids', resource_ids,
        'params', params,
        'gpus', gpus,
        'gpus_from', gpus_from,
        'gpu_model', gpu_model,
        'peak_dense_tflops', peak_dense_tflops,
        'mfu', round(mfu, 4),
        'mfu_mean', round(mfu_mean, 4),
        'mfu_step_time', round(mfu_step_time, 4),
        'floor', job_floor,
        'intervals', intervals,
        'low_minutes', round(low_seconds / 60, 2),
        'tokens', tokens,
        'tokens_per_gpu_hour', round(tokens_per_gpu_hour, 0),
        'outside_step_share', round(outside_step_share, 3),
        'data_share', round(data_share, 3),
        'power_share', round(power_share, 3),
        'util_mean_pct', round(util_mean, 1),
        'cause', cause_code,
        'claimed_by', claimed_by,
        'priced_gpu_hours', round(priced_gpu_hours, 4),
        'gpu_cost', round(gpu_cost, 2),
        'team_source', team_source
    ) as evidence,
    waste::decimal(18, 6) as estimated_waste,
    coalesce(waste_currency, currency) as currency,
    'cost_hourly ÷ GPUs × (1 − MFU / floor) for each GPU-slice of the job no other GPU rule prices'
        as waste_basis
from combined
order by estimated_waste desc, resource_id
