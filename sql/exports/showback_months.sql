-- The months the showback mart holds cost for, newest first (YYYY-MM), each with its cost per currency
select
    strftime(month, '%Y-%m') as month,
    currency,
    sum(cost)::decimal(38, 12) as cost
from showback
where kind <> 'waste'
group by all
order by month desc, currency
