-- grain: one row per modelled GPU host x hour it costs (resource_id 'host:<host_key>', hour)
-- depends_on: int_host_resources, int_host_pricing, int_gpu_slices, int_jobs, billing_line_items, pricing_entries
-- What a host no bill lists cost each hour under the `pricing:` entry that matches it (docs/gpu.md "Cost
-- models"), whether or not telemetry covers the hour. The hours run from the first to the last hour of
-- data in the warehouse (the earliest and latest telemetry sample, job start or end, billing charge
-- period), not to the wall clock, so a run over the same data prices the same hours:
-- - owned: from in_service (else the host's first telemetry, else first sighting) to retired (inclusive,
--   else the end of data), every hour of it whether telemetry covers it or not;
--   depreciation (purchase_price - residual_value) / life_years / (12 x days_per_month() x 24) per hour
--   for the life_years after in_service, plus power: the GPUs' mean watts in the hour from telemetry (a
--   GPU without power readings in the hour draws its nameplate: nameplate_watts, else its power limit)
--   x host_overhead x pue / 1000 x kwh_price, plus facility_per_month / (days_per_month() x 24);
-- - contract: every hour from valid_from (else the host's first sighting) to valid_to (inclusive, else the
--   end of data): per_node_hour, or per_gpu_hour x its GPUs (the entry's gpus, else the GPUs its
--   telemetry reported, else its instance type's).
-- watts: the GPUs' power the hour is priced with (owned); watts_source: telemetry, nameplate, both, none
with bounds as (
    select
        date_trunc('hour', least(t.first_hour, b.first_at, j.first_at)) as data_start,
        date_trunc('hour', greatest(t.end_at, b.end_at, j.end_at) - interval 1 microsecond) + interval 1 hour
            as data_end
    from (select min(hour) as first_hour, max(slice_end) as end_at from int_gpu_slices) as t
    cross join (
        select min(charge_period_start) as first_at, max(charge_period_end) as end_at from billing_line_items
    ) as b
    cross join (
        select min(started_at) as first_at, greatest(max(ended_at), max(started_at)) as end_at from int_jobs
    ) as j
),

modelled as (
    select
        r.host_key,
        any_value(r.resource_id) as resource_id,
        any_value(r.pricing_position) as position
    from int_host_resources as r
    where r.pricing_position is not null
    group by r.host_key
),

hosts as (
    select
        m.resource_id,
        m.host_key,
        p.gpu_model,
        e.*,
        coalesce(e.gpus, p.gpus_seen, p.catalogue_gpus) as gpu_count,
        coalesce(e.nameplate_watts, p.power_limit_w) as nameplate_w,
        case when e.nameplate_watts is not null then 'config' when p.power_limit_w is not null then 'power limit' end
            as nameplate_source,
        case e.basis
            when 'owned' then coalesce(e.in_service::timestamp, p.first_telemetry, p.first_seen)
            else coalesce(e.valid_from::timestamp, p.first_seen)
        end as starts_at,
        e.valid_to::timestamp + interval 1 day as ends_at  -- contract: valid_to; owned: retired
    from modelled as m
    inner join int_host_pricing as p on p.host_key = m.host_key
    inner join pricing_entries as e on e.position = m.position
),

hours as (
    select
        h.*,
        unnest(range(
            greatest(date_trunc('hour', h.starts_at), b.data_start),
            least(coalesce(h.ends_at, b.data_end), b.data_end),
            interval 1 hour
        )) as hour
    from hosts as h
    cross join bounds as b
    where h.starts_at is not null and b.data_start is not null
),

gpu_power as (
    -- each GPU's mean power in the hour (samples-weighted over its slices); MIG instances as their GPU
    select
        lower(split_part(trim(host), '.', 1)) as host_key,
        hour,
        split_part(gpu_id, '/mig', 1) as gpu,
        sum(power_mean_w * samples) / sum(samples) as watts
    from int_gpu_slices
    where power_mean_w is not null
    group by all
),

host_power as (
    select host_key, hour, sum(watts) as watts, count(*) as gpus_measured
    from gpu_power
    group by all
),

priced as (
    select
        h.*,
        coalesce(p.watts, 0) as measured_w,
        coalesce(p.gpus_measured, 0) as gpus_measured,
        greatest(h.gpu_count - coalesce(p.gpus_measured, 0), 0) as gpus_nameplate,
        h.basis = 'owned' and epoch(h.hour) - epoch(h.starts_at)
        < h.life_years * 12 * days_per_month() * 86400 as in_life
    from hours as h
    left join host_power as p on p.host_key = h.host_key and p.hour = h.hour
),

costed as (
    select
        *,
        measured_w + gpus_nameplate * coalesce(nameplate_w, 0) as watts,
        case
            when gpus_nameplate = 0 then 'telemetry'
            when nameplate_w is null then case when gpus_measured > 0 then 'telemetry' else 'none' end
            when gpus_measured = 0 then 'nameplate'
            else 'telemetry and nameplate'
        end as watts_source,
        case when in_life
            then (purchase_price - residual_value) / (life_years * 12 * days_per_month() * 24) else 0
        end as depreciation,
        facility_per_month / (days_per_month() * 24) as facility
    from priced
)

select
    resource_id,
    host_key,
    hour,
    basis,
    currency,
    gpu_model,
    gpu_count,
    case basis
        when 'owned' then depreciation + facility
            + (watts * host_overhead * pue / 1000 * kwh_price)::decimal(38, 12)
        else coalesce(per_node_hour, per_gpu_hour * gpu_count)
    end::decimal(38, 12) as cost,
    watts,
    watts_source,
    case basis
        when 'owned' then json_object(
            'entry', source,
            'purchase_price', purchase_price,
            'residual_value', residual_value,
            'life_years', life_years,
            'in_service', strftime(starts_at, '%Y-%m-%d'),
            'in_service_from', case when in_service is null then 'first telemetry' else 'config' end,
            'gpus', gpu_count,
            'depreciation_per_hour', round(depreciation, 6),
            'gpu_watts', round(watts, 3),
            'watts_source', watts_source,
            'gpus_measured', gpus_measured,
            'nameplate_watts', nameplate_w,
            'nameplate_from', nameplate_source,
            'host_overhead', host_overhead,
            'pue', pue,
            'kwh', round(watts * host_overhead * pue / 1000, 6),
            'kwh_price', kwh_price,
            'power_cost', round(watts * host_overhead * pue / 1000 * kwh_price, 6),
            'facility_per_month', facility_per_month,
            'facility_per_hour', round(facility, 6),
            'days_per_month', days_per_month()
        )
        else json_object(
            'entry', source,
            'per_gpu_hour', per_gpu_hour,
            'per_node_hour', per_node_hour,
            'gpus', gpu_count,
            'valid_from', valid_from,
            'valid_to', valid_to
        )
    end::varchar as pricing_inputs
from costed
where basis = 'owned' or coalesce(per_node_hour, per_gpu_hour * gpu_count) is not null
