-- grain: one row per provider x region x instance type x hour x purchase option x currency, from the GPU
--   instance usage lines of an hour or less
-- depends_on: billing_line_items, gpu_instance_types
-- How each hour's GPU instances were bought: on demand, under a commitment discount (a Reserved Instance,
-- Savings Plan or reservation the line says it used) or as spot; the commitment and spot advice read it
-- (pipelines/advice/, docs/advice.md). Usage lines only: a commitment's unused share and its fees are
-- COM001's (commitment_lines). Lines longer than an hour (daily or monthly usage lines) are left out: they
-- say nothing about the hours inside them.
-- instance_family: the instance type before its first '.' (p4d, p5): what an EC2 Instance Savings Plan or
-- a regional Reserved Instance covers
-- purchase: on_demand | commitment (CommitmentDiscountId set, not Unused) | spot (PricingCategory Dynamic)
-- commitment_type: CommitmentDiscountType of the commitment lines (NULL for on demand and spot)
-- gpu_count: GPUs per instance of the type (gpu_instance_types)
-- instance_hours: instance-hours billed in the hour (each line's length over 3600 s)
-- gpu_hours: instance_hours x gpu_count
-- list_cost: the lines' list (on-demand) cost, in currency
-- effective_cost: the lines' effective (amortised) cost, in currency
-- resources: distinct resources billed in the hour
with lines as (
    select
        b.provider_name as provider,
        b.region_id,
        b.x_instance_type as instance_type,
        split_part(b.x_instance_type, '.', 1) as instance_family,
        date_trunc('hour', b.charge_period_start) as hour,
        case
            when b.commitment_discount_id is not null then 'commitment'
            when b.pricing_category = 'Dynamic' then 'spot'
            else 'on_demand'
        end as purchase,
        b.commitment_discount_type,
        t.gpu_count,
        b.billing_currency as currency,
        (epoch(b.charge_period_end) - epoch(b.charge_period_start)) / 3600 as hours,
        b.list_cost,
        b.effective_cost,
        b.resource_id
    from billing_line_items as b
    inner join gpu_instance_types as t on t.instance_type = b.x_instance_type
    where b.charge_category = 'Usage'
        and b.x_instance_type is not null
        and b.charge_period_end > b.charge_period_start
        and b.charge_period_end - b.charge_period_start <= interval 1 hour
        and coalesce(b.commitment_discount_status, 'Used') <> 'Unused'
)

select
    provider,
    region_id,
    instance_type,
    any_value(instance_family) as instance_family,
    hour,
    purchase,
    any_value(commitment_discount_type order by commitment_discount_type nulls last) as commitment_type,
    any_value(gpu_count) as gpu_count,
    currency,
    sum(hours) as instance_hours,
    sum(hours * gpu_count) as gpu_hours,
    sum(list_cost)::decimal(18, 6) as list_cost,
    sum(effective_cost)::decimal(18, 6) as effective_cost,
    count(distinct resource_id) as resources
from lines
group by provider, region_id, instance_type, hour, purchase, currency
