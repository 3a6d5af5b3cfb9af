-- grain: one row per billing currency the week's spare capacity was priced in (no row without `spares:` or
--   without spare time in the week)
-- depends_on: gpu_claims, gpu_billed_hours, resources, spare_pools
-- params: $window_start, $window_end
-- The hot spares' capacity of the week against the `spares:` policy (docs/gpu.md "Spare pools"): the parts of
-- billed hours gpu_claims gives the `spare` claim (a spare host with no job on it; a claim without tests, so
-- it wins whatever the thresholds), as GPU-hours (the part of the hour x the resource's GPUs) and cost (the
-- hour's cost x the part of the hour), beside the fleet's GPU-hours (every billed GPU resource-hour x its
-- GPUs, the fleet table's "GPU-hours priced"). Spares above the policy share are an attention item, never
-- waste: excess_gpu_hours = max(0, spare GPU-hours - policy_share x fleet GPU-hours), priced at the spares'
-- own cost per GPU-hour (excess_cost = spare_cost x excess_gpu_hours / spare GPU-hours).
-- spare_hosts: spare resources with spare time in the week (all currencies)
-- spare_gpu_hours: spare GPU-hours priced in this currency
-- spare_cost: their cost, in currency
-- fleet_gpu_hours: the fleet's GPU-hours in the week (all currencies: hours are hours)
-- spare_share: spare GPU-hours (all currencies) / fleet GPU-hours
-- policy_share: the share the policy allows (spare_pools.policy_share)
-- excess_gpu_hours: spare GPU-hours (all currencies) beyond the policy share
-- excess_cost: this currency's part of the excess, at its spares' cost per GPU-hour
with billed as (
    select
        b.resource_id,
        b.hour,
        b.cost,
        b.currency,
        r.gpu_count
    from gpu_billed_hours as b
    inner join resources as r on r.resource_id = b.resource_id
    where b.hour >= $window_start and b.hour < $window_end
),

spare_parts as (
    -- each part of an hour the spare claim wins, once per instance (its GPU-slices share the part)
    select distinct
        resource_id,
        hour,
        slice_start,
        slice_end
    from gpu_claims
    where claimed_by(claims, []) = 'spare' and hour >= $window_start and hour < $window_end
),

spare as (
    select
        b.currency,
        sum(b.gpu_count * (epoch(p.slice_end) - epoch(p.slice_start)) / 3600) as gpu_hours,
        sum(b.cost * (epoch(p.slice_end) - epoch(p.slice_start)) / 3600) as cost
    from spare_parts as p
    inner join billed as b on b.resource_id = p.resource_id and b.hour = p.hour
    group by b.currency
),

totals as (
    select
        (select sum(gpu_count) from billed) as fleet_gpu_hours,
        (select sum(gpu_hours) from spare) as spare_gpu_hours,
        (select count(distinct resource_id) from spare_parts as p
            where exists (select 1 from billed as b where b.resource_id = p.resource_id and b.hour = p.hour))
            as hosts,
        (select max(policy_share) from spare_pools) as policy_share
),

judged as (
    select
        *,
        spare_gpu_hours / nullif(fleet_gpu_hours, 0) as spare_share,
        greatest(spare_gpu_hours - policy_share * fleet_gpu_hours, 0) as excess_gpu_hours
    from totals
)

select
    s.currency,
    j.hosts::integer as spare_hosts,
    s.gpu_hours::double as spare_gpu_hours,
    s.cost::decimal(18, 6) as spare_cost,
    j.fleet_gpu_hours::double as fleet_gpu_hours,
    j.spare_share::double as spare_share,
    j.policy_share::double as policy_share,
    j.excess_gpu_hours::double as excess_gpu_hours,
    (s.cost * j.excess_gpu_hours / nullif(j.spare_gpu_hours, 0))::decimal(18, 6) as excess_cost
from spare as s
cross join judged as j
where j.policy_share is not null
order by s.currency
