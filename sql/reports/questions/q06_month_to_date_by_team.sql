-- question: How much has each team spent this month so far, against the same days of last month?
-- grain: team x currency
-- depends_on: cost_hourly
with now_ as (
    select max(hour) + interval 1 hour as t, date_trunc('month', max(hour)) as month_start
    from cost_hourly
)

select
    coalesce(c.team, '(untagged)') as team,
    c.billing_currency as currency,
    round(sum(c.effective_cost) filter (where c.hour >= n.month_start), 2) as month_to_date,
    round(sum(c.effective_cost) filter (
        where c.hour >= n.month_start - interval 1 month and c.hour < n.t - interval 1 month
    ), 2) as same_days_last_month
from cost_hourly as c
cross join now_ as n
where c.hour >= n.month_start - interval 1 month
group by all
order by month_to_date desc nulls last
