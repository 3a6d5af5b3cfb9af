-- question: Which acknowledged findings lapse in the next 14 days, and who acknowledged them?
-- grain: one row per acknowledged finding (its latest ack)
-- depends_on: finding_acks
select
    finding_key,
    rule_id,
    resource_id,
    acked_until,
    reason,
    acked_by,
    acked_at
from finding_acks
qualify row_number() over (partition by finding_key order by acked_at desc) = 1
    and acked_until between current_date and current_date + 14
order by acked_until
