-- grain: one row per provider x region x instance family x currency with on-demand GPU usage in the lookback
-- depends_on: gpu_purchase_hours (marts only)
-- params: $lookback_start, $window_end, $percentile
-- The steady floor of on-demand GPU instances: every hour from the first hour of data in the lookback to the
-- window's end counts (an hour with nothing billed is 0 instances), the floor is the $percentile quantile of
-- the instances billed each hour, rounded down to whole instances (what a commitment can buy). Per ISO
-- week: hours, instance-hours, the instance-hours a commitment of the floor would cover and the hours the
-- usage fell below it. The discount the bill shows on the family's committed usage in the same region.
with usage as (
    select *
    from gpu_purchase_hours
    where hour >= $lookback_start::timestamp
        and hour < $window_end::timestamp
),

data_start as (
    select min(hour) as first_hour
    from usage
),

families as (
    select
        provider,
        region_id,
        instance_family,
        currency,
        mode(gpu_count) as gpus_per_instance,
        sum(effective_cost) / sum(instance_hours) as on_demand_rate,
        list(distinct instance_type order by instance_type) as instance_types,
        sum(instance_hours) as on_demand_instance_hours,
        sum(effective_cost) as on_demand_cost
    from usage
    where purchase = 'on_demand' and instance_hours > 0
    group by provider, region_id, instance_family, currency
),

grid as (
    select
        f.provider,
        f.region_id,
        f.instance_family,
        f.currency,
        unnest(range(d.first_hour, $window_end::timestamp, interval 1 hour)) as hour
    from families as f
    cross join data_start as d
),

hourly as (
    select
        g.provider,
        g.region_id,
        g.instance_family,
        g.currency,
        g.hour,
        coalesce(sum(u.instance_hours), 0) as instances
    from grid as g
    left join usage as u
        on u.purchase = 'on_demand'
        and u.provider is not distinct from g.provider
        and u.region_id is not distinct from g.region_id
        and u.instance_family = g.instance_family
        and u.currency = g.currency
        and u.hour = g.hour
    group by g.provider, g.region_id, g.instance_family, g.currency, g.hour
),

floors as (
    select
        provider,
        region_id,
        instance_family,
        currency,
        count(*) as hours,
        min(hour) as first_hour,
        max(hour) + interval 1 hour as end_hour,
        quantile_disc(instances, $percentile) as floor_quantile,
        floor(quantile_disc(instances, $percentile))::integer as floor_instances,
        min(instances) as min_instances,
        max(instances) as max_instances,
        avg(instances) as mean_instances
    from hourly
    group by provider, region_id, instance_family, currency
),

weekly as (
    select
        provider,
        region_id,
        instance_family,
        currency,
        list(
            {
                'week_start': week_start,
                'hours': hours,
                'instance_hours': instance_hours,
                'covered_instance_hours': covered_instance_hours,
                'hours_below_floor': hours_below_floor
            }
            order by week_start
        ) as weeks
    from (
        select
            h.provider,
            h.region_id,
            h.instance_family,
            h.currency,
            date_trunc('week', h.hour)::date as week_start,
            count(*) as hours,
            sum(h.instances) as instance_hours,
            sum(least(h.instances, f.floor_instances)) as covered_instance_hours,
            count(*) filter (where h.instances < f.floor_instances) as hours_below_floor
        from hourly as h
        inner join floors as f
            on f.provider is not distinct from h.provider
            and f.region_id is not distinct from h.region_id
            and f.instance_family = h.instance_family
            and f.currency = h.currency
        group by all
    )
    group by provider, region_id, instance_family, currency
),

bill_discount as (
    -- what the bill shows a commitment saving on the family's usage in the region: 1 - effective / list
    select
        provider,
        region_id,
        instance_family,
        currency,
        1 - sum(effective_cost) / sum(list_cost) as discount,
        mode(commitment_type) as commitment_type,
        sum(instance_hours) as committed_instance_hours
    from usage
    where purchase = 'commitment' and list_cost > 0
    group by provider, region_id, instance_family, currency
)

select
    f.provider,
    f.region_id,
    f.instance_family,
    f.currency,
    f.gpus_per_instance,
    f.on_demand_rate::double as on_demand_rate,
    f.instance_types,
    f.on_demand_instance_hours,
    f.on_demand_cost::double as on_demand_cost,
    l.hours,
    l.first_hour,
    l.end_hour,
    l.floor_quantile,
    l.floor_instances,
    l.min_instances,
    l.max_instances,
    l.mean_instances,
    w.weeks,
    b.discount::double as bill_discount,
    b.commitment_type as bill_commitment_type,
    b.committed_instance_hours as bill_committed_instance_hours
from families as f
inner join floors as l
    on l.provider is not distinct from f.provider
    and l.region_id is not distinct from f.region_id
    and l.instance_family = f.instance_family
    and l.currency = f.currency
inner join weekly as w
    on w.provider is not distinct from f.provider
    and w.region_id is not distinct from f.region_id
    and w.instance_family = f.instance_family
    and w.currency = f.currency
left join bill_discount as b
    on b.provider is not distinct from f.provider
    and b.region_id is not distinct from f.region_id
    and b.instance_family = f.instance_family
    and b.currency = f.currency
order by f.provider, f.region_id, f.instance_family, f.currency
