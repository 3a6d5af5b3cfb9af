-- grain: hour x resource_id x (currency, service, charge category, account, tags) — the basis rules price from
-- depends_on: billing_line_items
-- Each line's cost is spread evenly over the hours of its charge period (by overlap, so partial hours get
-- their share); `allocation` says whether a row holds hourly lines only or shares of longer lines.
with lines as (
    select
        *,
        greatest(epoch(charge_period_end) - epoch(charge_period_start), 0) as seconds
    from billing_line_items
),

hours as (
    select
        *,
        unnest(
            case
                when seconds = 0 then [date_trunc('hour', charge_period_start)]
                else range(date_trunc('hour', charge_period_start), charge_period_end, interval 1 hour)
            end
        ) as hour
    from lines
),

shares as (
    select
        *,
        case
            when seconds = 0 then 1
            else (
                epoch(least(charge_period_end, hour + interval 1 hour))
                - epoch(greatest(charge_period_start, hour))
            ) / seconds
        end::decimal(18, 12) as share
    from hours
)

select
    hour,
    resource_id,
    billing_currency,
    provider_name as provider,
    sub_account_id as account_id,
    region_id,
    service_category,
    service_name,
    charge_category,
    x_instance_type as instance_type,
    team,
    project,
    owner,
    case when bool_or(seconds > 3600) then 'spread' else 'hourly' end as allocation,
    count(*) as line_items,
    sum(billed_cost * share)::decimal(18, 6) as billed_cost,
    sum(effective_cost * share)::decimal(18, 6) as effective_cost,
    sum(list_cost * share)::decimal(18, 6) as list_cost
from shares
group by all
