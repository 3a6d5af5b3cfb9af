-- Billing reconciliation per file (pipelines/ingest/billing/checks.py): every billing file the ledger holds
-- as loaded with lines, with what the ledger recorded landing (rows, *_cost_sum), what the file itself
-- holds (file_*) and what billing_lines holds for it now (landed_*).
-- params: $kinds
with landed as (
    select x_file_id, count(*) as n, sum(billed_cost) as billed, sum(effective_cost) as effective
    from billing_lines
    group by 1
)

select
    i.uri, i.source, i.billing_period, i.rows, i.file_rows, i.billed_cost_sum, i.file_billed_cost_sum,
    i.effective_cost_sum, i.file_effective_cost_sum,
    coalesce(l.n, 0) as landed_rows, coalesce(l.billed, 0) as landed_billed,
    coalesce(l.effective, 0) as landed_effective
from ingest_files as i
left join landed as l on l.x_file_id = i.file_id
where i.status = 'loaded' and i.kind in (select unnest($kinds)) and coalesce(i.rows, 0) > 0
order by i.uri
