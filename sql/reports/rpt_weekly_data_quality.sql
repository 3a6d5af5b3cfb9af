-- grain: one row per billing currency: how much of the week's spend the report can see into
-- depends_on: cost_hourly
-- params: $window_start, $window_end
-- tagged_spend: effective cost of lines with a team (the canonical `team` tag); the GPU telemetry share is
-- computed from rpt_weekly_gpu_resource_hours (observed GPUs / billed GPUs, weighted by cost).
select
    billing_currency as currency,
    sum(effective_cost)::decimal(18, 2) as spend,
    coalesce(sum(effective_cost) filter (where team is not null), 0)::decimal(18, 2) as tagged_spend,
    coalesce(sum(effective_cost) filter (where project is not null), 0)::decimal(18, 2) as project_tagged_spend,
    case when sum(effective_cost) > 0
        then round(100 * coalesce(sum(effective_cost) filter (where team is not null), 0) / sum(effective_cost), 1)
    end as tagged_pct
from cost_hourly
where hour >= $window_start and hour < $window_end
group by billing_currency
order by spend desc
