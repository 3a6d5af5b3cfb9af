-- grain: one row
-- The fingerprint of a small table's rows from their values (the columns in $skip, the time a row was
-- written, left out): for what the config and the catalogue write again on every run, unchanged or not.
select coalesce(sum(hash(cast(row(*columns(lambda c: not list_contains($skip, c))) as varchar))), 0) as fingerprint
from query_table($table)
