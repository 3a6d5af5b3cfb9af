-- grain: one row per scheduler (jobs_enriched.scheduler): pipelines/catalog/scheduler_names.csv, a temporary
-- table of every connection. What a GPU rule's finding about a job calls it (`job_type`, its resource_type)
-- and what a finding about a job name (a GPU004 crash loop) calls it (`job_name_type`); the `*` row names
-- the jobs of any other scheduler. The report reads the same file to tell job findings from the others.
create or replace temp table scheduler_names as
select *
from read_csv($p, header = true, auto_detect = false, delim = ',', quote = '"', escape = '"', columns = {
    'scheduler': 'varchar', 'job_type': 'varchar', 'job_name_type': 'varchar', 'description': 'varchar'
})
