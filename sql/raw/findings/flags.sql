-- params: $attention, $rule_id, $week_start, $finding_key (NULL: any)
-- Whether each finding adds to its week's waste total, and the ack in force for its week, as findings.csv
-- states them (sql/reports/rpt_weekly_findings.sql): `counted` = status waste, not an attention category,
-- not acknowledged; acknowledged = the finding_key's latest ack runs to or past the week's Monday. Run
-- after a rule's findings for a week are written (pipelines/evaluate.py) and after an ack
-- (pipelines/report/acks.py), for the findings they touch, in the same transaction.
update findings as f
set
    finding_key = n.finding_key,
    attention = n.attention,
    acknowledged = n.acknowledged,
    acked_until = n.acked_until,
    ack_reason = n.ack_reason,
    acked_by = n.acked_by,
    counted = n.status = 'waste' and not n.attention and not n.acknowledged
from (
    select
        k.finding_id,
        k.finding_key,
        k.status,
        list_contains($attention, k.category) as attention,
        coalesce(a.acked_until >= k.week_start, false) as acknowledged,
        case when a.acked_until >= k.week_start then a.acked_until end as acked_until,
        case when a.acked_until >= k.week_start then a.ack_reason end as ack_reason,
        case when a.acked_until >= k.week_start then a.acked_by end as acked_by
    from (
        select
            finding_id,
            status,
            category,
            week_start,
            substr(sha1(rule_id || '|' || coalesce(resource_id, '')), 1, 16) as finding_key
        from findings
        where ($rule_id is null or rule_id = $rule_id) and ($week_start is null or week_start = $week_start)
    ) as k
    left join (
        select
            finding_key,
            arg_max_null(acked_until, acked_at) as acked_until,
            arg_max_null(reason, acked_at) as ack_reason,
            arg_max_null(acked_by, acked_at) as acked_by
        from finding_acks
        group by finding_key
    ) as a on a.finding_key = k.finding_key
    where $finding_key is null or k.finding_key = $finding_key
) as n
where n.finding_id = f.finding_id
