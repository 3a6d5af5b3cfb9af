-- The "now" of the data the daily alert judges: the end of the newest hour both the bill and the GPU
-- telemetry reach. Observed data only: a cost model's hours (`pricing:`, owned or contract) run to the end
-- of any data, a month's charge period included, so they do not move it. The bill usually lags the
-- telemetry (then the bill's newest hour is now); when the telemetry lags (an exporter down) its newest
-- hour is now, so hosts are not taken for zombies in hours nobody observed. With only one of the two, that
-- one's newest hour; NULL: no GPU hour at all (least ignores NULL).
with billed as (
    select max(b.hour) + interval 1 hour as newest
    from gpu_billed_hours as b
    inner join resources as r on r.resource_id = b.resource_id
    where coalesce(r.pricing_basis, 'bill') = 'bill'
),

observed as (
    select max(hour) + interval 1 hour as newest
    from gpu_job_hours
)

select least(b.newest, o.newest) as as_of
from billed as b, observed as o
