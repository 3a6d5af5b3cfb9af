-- The id and uri of every ledger row of one source (pipelines/ingest/ledger.py follow_moves()).
-- params: $source
select file_id, uri
from ingest_files
where source = $source
