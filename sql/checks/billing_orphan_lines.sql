-- Billing lines that belong to no file the ledger holds as loaded (pipelines/ingest/billing/checks.py):
-- one row per such file id, its uri and ledger status when the ledger knows it.
select coalesce(any_value(i.uri), 'file id ' || l.x_file_id) as file, any_value(i.status) as status,
       count(*) as n
from billing_lines as l
left join ingest_files as i on i.file_id = l.x_file_id
where l.x_file_id not in (select file_id from ingest_files where status = 'loaded')
group by l.x_file_id order by 1
