-- Per source: when it last delivered something new (a file or snapshot loaded), how many files it holds,
-- and whether any of its files was ever read. pipelines/ingest/freshness.py compares the newest delivery
-- with the source's expected cadence.
select
    source,
    max(loaded_at) as last_delivery,
    count(*) filter (where status = 'loaded') as files_loaded,
    count(*) as files_seen
from ingest_files
group by source
