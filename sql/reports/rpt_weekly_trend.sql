-- grain: one row per ISO week x currency over the trend span: spend and counted waste
-- depends_on: cost_hourly, findings, finding_acks
-- params: $trend_start, $window_end, $attention
-- Waste per week as that week's report counts it (waste findings of waste rules, not acknowledged); a week
-- without any stored finding has NULL waste (not evaluated), not 0.
with spend as (
    select
        date_trunc('week', hour)::date as week_start,
        billing_currency as currency,
        sum(effective_cost) as spend
    from cost_hourly
    where hour >= $trend_start and hour < $window_end
    group by all
),

acks as (
    select finding_key, arg_max_null(acked_until, acked_at) as acked_until
    from finding_acks
    group by finding_key
),

evaluated as (
    select distinct week_start
    from findings
    where week_start >= $trend_start::date and week_start < $window_end::date
),

waste as (
    select f.week_start, f.currency, sum(f.estimated_waste) as waste
    from findings as f
    left join acks as a
        on a.finding_key = substr(sha1(f.rule_id || '|' || coalesce(f.resource_id, '')), 1, 16)
    where f.week_start >= $trend_start::date and f.week_start < $window_end::date
        and f.status = 'waste'
        and not list_contains($attention, f.category)
        and not coalesce(a.acked_until >= f.week_start, false)
    group by all
)

select
    s.week_start,
    s.currency,
    s.spend::decimal(18, 2) as spend,
    case when e.week_start is not null then coalesce(w.waste, 0)::decimal(18, 2) end as waste
from spend as s
left join evaluated as e on e.week_start = s.week_start
left join waste as w on w.week_start = s.week_start and w.currency = s.currency
order by s.currency, s.week_start
