-- grain: rule x currency for the week (waste rules; attention rules have their own section)
-- depends_on: findings, finding_acks
-- params: $week_start, $attention, $days_per_month
-- waste counts unacknowledged `waste` findings; acknowledged waste is shown beside it, never added.
-- monthly_run_rate = waste x days_per_month (30.44) / 7: what the week's waste costs a month if it goes
-- on. Storage waste is priced per week as bytes x price per GB-month x 7 / 30.44, so for the storage
-- rules it is exactly the flagged bytes' monthly cost: what deleting (or tiering) them saves a month.
with acks as (
    select finding_key, arg_max_null(acked_until, acked_at) as acked_until
    from finding_acks
    group by finding_key
),

f as (
    select
        findings.*,
        coalesce(a.acked_until >= findings.week_start, false) as acknowledged
    from findings
    left join acks as a
        on a.finding_key = substr(sha1(findings.rule_id || '|' || coalesce(findings.resource_id, '')), 1, 16)
    where findings.week_start = $week_start and not list_contains($attention, findings.category)
)

select
    rule_id,
    any_value(rule_name) as rule_name,
    any_value(category) as category,
    currency,
    count(*) filter (where status = 'waste' and not acknowledged) as waste_findings,
    count(*) filter (where status = 'suspect') as suspect_findings,
    count(*) filter (where status = 'insufficient_data') as insufficient_data_findings,
    count(*) filter (where acknowledged) as acknowledged_findings,
    coalesce(sum(estimated_waste) filter (where status = 'waste' and not acknowledged), 0)::decimal(18, 2)
        as waste,
    coalesce(
        sum(estimated_waste) filter (where status = 'waste' and not acknowledged) * $days_per_month / 7, 0
    )::decimal(18, 2) as monthly_run_rate,
    coalesce(sum(estimated_waste) filter (where status = 'suspect'), 0)::decimal(18, 2) as suspect_amount,
    coalesce(sum(estimated_waste) filter (where status = 'waste' and acknowledged), 0)::decimal(18, 2)
        as acknowledged_waste
from f
group by rule_id, currency
order by waste desc, rule_id
