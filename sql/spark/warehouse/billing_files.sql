-- grain: one row per billing file whose lines the warehouse holds (what Spark reads for cost_hourly)
-- depends_on: ingest_files, billing_lines
-- The ledger decides which files count (a superseded delivery, a duplicate or a removed file has no lines
-- left), so Spark reads exactly the files whose lines billing_line_items shows, where they lie, or is handed
-- their lines (billing_lines_handed.sql). What the ledger landed from each (rows, billed and effective cost)
-- is checked against what Spark read or was handed.
select f.file_id, f.source, f.kind, f.uri, f.rows, f.billed_cost_sum, f.effective_cost_sum
from ingest_files as f
where f.file_id in (select distinct x_file_id from billing_lines)
order by f.uri
