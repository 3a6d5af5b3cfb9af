-- Billing reconciliation per source and billing period (pipelines/ingest/billing/checks.py): the rows and
-- billed cost the loaded files hold (file_*) against what the ledger recorded landing.
-- params: $kinds
select i.source, i.billing_period, sum(i.file_billed_cost_sum) as file_billed,
       sum(i.billed_cost_sum) as billed, sum(i.file_rows) as file_rows, sum(i.rows) as n
from ingest_files as i
where i.status = 'loaded' and i.kind in (select unnest($kinds)) and i.billing_period is not null
      and coalesce(i.rows, 0) > 0
group by all order by all
