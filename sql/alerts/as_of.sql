-- The "now" of the data the daily alert judges: the end of the newest billed GPU hour. GPU001 and GPU004
-- price from gpu_billed_hours, so telemetry newer than the bill prices nothing yet; NULL: no GPU was billed.
select max(hour) + interval 1 hour as as_of
from gpu_billed_hours
