-- params: $finding_key, $on
-- The ack in force for a finding on a day (the latest ack of its key runs to or past it), as
-- pipelines/report/acks.py's in_force reads finding_acks: apply never touches an acknowledged target.
select acked_until, reason, acked_by
from finding_acks
where finding_key = $finding_key
qualify row_number() over (order by acked_at desc) = 1 and acked_until is not null and acked_until >= $on::date
