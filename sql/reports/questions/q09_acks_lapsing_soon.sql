-- question: Which acknowledged findings of the week lapse within 14 days of its end, and who acknowledged them?
-- grain: one row per finding acknowledged for the week (its ack in force)
-- depends_on: findings
-- params: $week_start, $week_end
select
    finding_key,
    rule_id,
    resource_id,
    acked_until,
    ack_reason,
    acked_by
from findings
where week_start = $week_start and acknowledged and acked_until < $week_end + 14
order by acked_until, rule_id, resource_id
