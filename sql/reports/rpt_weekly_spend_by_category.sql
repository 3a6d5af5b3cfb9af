-- grain: team x project x currency x pricing basis for the week: effective spend by FOCUS service category group
-- depends_on: cost_hourly
-- params: $window_start, $window_end
-- FOCUS ServiceCategory grouped as the report shows it: Compute -> compute, Storage -> storage,
-- Networking -> network, AI and Machine Learning -> ai_ml, everything else (and none) -> other.
-- pricing_basis splits billed spend ('bill') from spend a `pricing:` cost model put a price on ('owned',
-- 'contract'), so a modelled cost is never shown as a bill.
with spend as (
    select
        coalesce(team, '(untagged)') as team,
        coalesce(project, '(no project)') as project,
        billing_currency as currency,
        coalesce(pricing_basis, 'bill') as pricing_basis,
        case lower(coalesce(service_category, ''))
            when 'compute' then 'compute'
            when 'storage' then 'storage'
            when 'networking' then 'network'
            when 'ai and machine learning' then 'ai_ml'
            else 'other'
        end as category_group,
        effective_cost
    from cost_hourly
    where hour >= $window_start and hour < $window_end
)

select
    team,
    project,
    currency,
    pricing_basis,
    coalesce(sum(effective_cost) filter (where category_group = 'compute'), 0)::decimal(18, 2) as compute,
    coalesce(sum(effective_cost) filter (where category_group = 'storage'), 0)::decimal(18, 2) as storage,
    coalesce(sum(effective_cost) filter (where category_group = 'network'), 0)::decimal(18, 2) as network,
    coalesce(sum(effective_cost) filter (where category_group = 'ai_ml'), 0)::decimal(18, 2) as ai_ml,
    coalesce(sum(effective_cost) filter (where category_group = 'other'), 0)::decimal(18, 2) as other,
    sum(effective_cost)::decimal(18, 2) as total
from spend
group by team, project, currency, pricing_basis
having sum(effective_cost) <> 0
order by team like '(%', team, total desc, project, pricing_basis
