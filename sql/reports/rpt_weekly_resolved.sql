-- grain: one row per finding of the previous week that no longer shows as waste this week
-- depends_on: findings, finding_acks
-- params: $week_start, $prev_start, $attention, $job_resource_types
-- Resolved = a waste finding of a waste rule last week whose finding_key has no `waste` finding this week.
-- Its last-week waste is waste that stopped (realised savings) when last week counted it (not acknowledged
-- then), it is gone this week (`now` = 'gone') and it is about a standing resource (`job` false: an
-- instance, bucket, checkpoint or upload that costs until someone acts). A finding that turned suspect or
-- insufficient_data is not savings, nor one about a job run or job name: a job that ended or did not recur
-- stopped by itself, so its absence proves nothing was fixed.
with keyed as (
    select
        *,
        substr(sha1(rule_id || '|' || coalesce(resource_id, '')), 1, 16) as finding_key
    from findings
    where week_start in ($week_start, $prev_start) and not list_contains($attention, category)
),

acks as (
    select finding_key, arg_max_null(acked_until, acked_at) as acked_until
    from finding_acks
    group by finding_key
),

this_week as (
    select finding_key, status
    from keyed
    where week_start = $week_start
)

select
    p.finding_id,
    p.finding_key,
    p.rule_id,
    p.rule_name,
    p.category,
    p.resource_id,
    p.resource_type,
    coalesce(p.team, '(untagged)') as team,
    p.project,
    p.currency,
    p.reason as last_reason,
    p.estimated_waste::decimal(18, 2) as last_week_waste,
    not coalesce(a.acked_until >= p.week_start, false) as counted_last_week,
    coalesce(t.status, 'gone') as now,
    list_contains($job_resource_types, p.resource_type) as job
from keyed as p
left join this_week as t on t.finding_key = p.finding_key
left join acks as a on a.finding_key = p.finding_key
where p.week_start = $prev_start
    and p.status = 'waste'
    and coalesce(t.status, 'gone') <> 'waste'
order by last_week_waste desc, p.rule_id, p.resource_id
