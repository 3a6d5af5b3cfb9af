-- The ledger rows of moved files (the temp table _file_moves: old_id, new_id, old_uri, new_uri) take their
-- new id and the uri they are at now (pipelines/ingest/ledger.py follow_moves()).
update ingest_files
set file_id = m.new_id, uri = m.new_uri
from _file_moves as m
where ingest_files.file_id = m.old_id
