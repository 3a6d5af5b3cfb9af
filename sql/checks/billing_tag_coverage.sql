-- Tag coverage per billing currency (pipelines/ingest/billing/checks.py): the effective spend of positive
-- lines, and the part of it that carries a `team`.
select
    billing_currency as currency,
    sum(effective_cost) filter (where effective_cost > 0) as spend,
    sum(effective_cost) filter (where effective_cost > 0 and team is not null) as with_team
from billing_line_items
group by 1 order by 1
