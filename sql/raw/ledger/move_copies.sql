-- The copies that name a moved file as their original (duplicate_of) name its uri now (the temp table
-- _file_moves: old_id, new_id, old_uri, new_uri; pipelines/ingest/ledger.py follow_moves()).
update ingest_files
set duplicate_of = m.new_uri
from _file_moves as m
where ingest_files.duplicate_of = m.old_uri and m.old_uri <> m.new_uri
