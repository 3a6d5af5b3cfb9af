-- grain: one row
-- depends_on: int_incremental_days
-- The fingerprint of a day-incremental table as a whole: each day it holds and what that day was built from.
select coalesce(sum(hash(cast(row(day, fingerprint) as varchar))), 0) as fingerprint
from int_incremental_days
where object = $object
