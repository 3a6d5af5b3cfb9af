-- question: How much had each team spent in the month by the week's end, against the same days of the month before?
-- grain: team x currency
-- depends_on: cost_hourly
-- params: $week_end
-- The month is the one holding the week's last day; month_to_date runs from its first day to the week's
-- end, same_days_last_month over the same days of the month before.
with bounds as (
    select
        $week_end::timestamp as t,
        date_trunc('month', $week_end::timestamp - interval 1 day) as month_start
)

select
    coalesce(c.team, '(untagged)') as team,
    c.billing_currency as currency,
    coalesce(sum(c.effective_cost) filter (where c.hour >= b.month_start), 0)::decimal(18, 2) as month_to_date,
    coalesce(sum(c.effective_cost) filter (where c.hour < b.t - interval 1 month), 0)::decimal(18, 2)
        as same_days_last_month
from cost_hourly as c
cross join bounds as b
where c.hour >= b.month_start - interval 1 month and c.hour < b.t
    and (c.hour >= b.month_start or c.hour < b.t - interval 1 month)
group by all
order by month_to_date desc, team
