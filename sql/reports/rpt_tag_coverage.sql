-- grain: one row per billing currency for the week
-- depends_on: cost_hourly
-- params: $window_start, $window_end
-- Tag coverage: the share of effective spend (positive amounts; credits and refunds left out) that carries
-- a canonical `team` (and `project`, `owner`) tag, resolved through the `tags:` config. Spend without a
-- team cannot be sent to anyone; the largest untagged service says where to start tagging.
with spend as (
    select
        billing_currency as currency,
        service_name,
        team,
        project,
        owner,
        effective_cost
    from cost_hourly
    where hour >= $window_start and hour < $window_end and effective_cost > 0
),

totals as (
    select
        currency,
        sum(effective_cost) as spend,
        sum(effective_cost) filter (where team is not null) as with_team,
        sum(effective_cost) filter (where project is not null) as with_project,
        sum(effective_cost) filter (where owner is not null) as with_owner
    from spend
    group by currency
),

untagged as (
    select
        currency,
        arg_max(service_name, amount) as top_untagged_service,
        max(amount) as top_untagged_spend
    from (
        select
            currency,
            coalesce(service_name, '(no service)') as service_name,
            sum(effective_cost) as amount
        from spend
        where team is null
        group by all
    )
    group by currency
)

select
    t.currency,
    t.spend::decimal(18, 2) as spend,
    coalesce(t.with_team, 0)::decimal(18, 2) as spend_with_team,
    (t.spend - coalesce(t.with_team, 0))::decimal(18, 2) as spend_without_team,
    round(100 * coalesce(t.with_team, 0) / t.spend, 1) as team_coverage_pct,
    round(100 * coalesce(t.with_project, 0) / t.spend, 1) as project_coverage_pct,
    round(100 * coalesce(t.with_owner, 0) / t.spend, 1) as owner_coverage_pct,
    u.top_untagged_service,
    coalesce(u.top_untagged_spend, 0)::decimal(18, 2) as top_untagged_spend
from totals as t
left join untagged as u on u.currency = t.currency
order by t.spend desc
