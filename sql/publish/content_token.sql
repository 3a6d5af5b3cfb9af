-- grain: one row
-- The token of a small published table with no other record of its changes: the hash of its rows' values
-- (pipelines/warehouse.py, publish).
select coalesce(sum(hash(cast(row(*columns(*)) as varchar))), 0) as token
from query_table($table)
