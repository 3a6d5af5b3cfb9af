-- grain: one row per finding of the week, with its lifecycle and acknowledgement, largest waste first
-- depends_on: findings, finding_acks, resources
-- params: $week_start, $prev_start, $attention
-- finding_key = sha1(rule_id|resource_id): the same finding from week to week. first_seen is its earliest
-- week, weeks_open the run of consecutive weeks up to this one with a finding for it, cumulative_waste
-- the sum of its counted waste up to this week. An ack is in force for the week when the key's latest ack
-- runs to or past the week's Monday. `counted` = in the waste total: status waste, not an attention
-- category, not acknowledged. pricing_basis: how the resources the finding prices are priced ('bill',
-- 'owned', 'contract', several joined by '+'), from the resource it names or the evidence's resource_ids;
-- NULL when it names no priced resource.
with keyed as (
    select
        *,
        substr(sha1(rule_id || '|' || coalesce(resource_id, '')), 1, 16) as finding_key
    from findings
    where week_start <= $week_start
),

acks as (
    select
        finding_key,
        arg_max_null(acked_until, acked_at) as acked_until,
        arg_max_null(reason, acked_at) as ack_reason,
        arg_max_null(acked_by, acked_at) as acked_by,
        max(acked_at) as acked_at
    from finding_acks
    group by finding_key
),

history as (
    select
        k.finding_key,
        k.week_start,
        k.status,
        k.estimated_waste,
        k.status = 'waste'
            and not list_contains($attention, k.category)
            and not coalesce(a.acked_until >= k.week_start, false) as counted
    from keyed as k
    left join acks as a on a.finding_key = k.finding_key
),

streaks as (
    -- consecutive weeks: week_start - 7 x row number is constant along a run
    select
        finding_key,
        week_start,
        week_start - to_days(7 * row_number() over (partition by finding_key order by week_start)::integer)
            as run
    from history
),

lifecycle as (
    select
        h.finding_key,
        min(h.week_start) as first_seen,
        coalesce(sum(h.estimated_waste) filter (where h.counted), 0) as cumulative_waste,
        count(*) as weeks_seen
    from history as h
    group by h.finding_key
),

current_run as (
    select s.finding_key, count(*) as weeks_open
    from streaks as s
    inner join streaks as now on now.finding_key = s.finding_key and now.week_start = $week_start
    where s.run = now.run
    group by s.finding_key
),

previous as (
    select finding_key, status, estimated_waste, counted
    from history
    where week_start = $prev_start
),

bases as (
    select
        u.finding_id,
        string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis) as pricing_basis
    from (
        select
            finding_id,
            unnest(list_distinct(list_append(
                coalesce(try_cast(json_extract_string(evidence, '$.resource_ids[*]') as varchar[]), []),
                resource_id
            ))) as resource_id
        from keyed
        where week_start = $week_start
    ) as u
    inner join resources as r on r.resource_id = u.resource_id
    group by u.finding_id
)

select
    k.finding_id,
    k.finding_key,
    k.rule_id,
    k.rule_name,
    k.category,
    k.severity,
    k.status,
    k.resource_id,
    k.resource_type,
    k.provider,
    k.account_id,
    k.region_id,
    coalesce(k.team, '(untagged)') as team,
    k.project,
    k.owner,
    k.job_id,
    k.estimated_waste,
    k.currency,
    k.reason,
    k.waste_basis,
    k.evidence,
    k.params,
    k.detected_at,
    list_contains($attention, k.category) as attention,
    coalesce(a.acked_until >= k.week_start, false) as acknowledged,
    case when a.acked_until >= k.week_start then a.acked_until end as acked_until,
    case when a.acked_until >= k.week_start then a.ack_reason end as ack_reason,
    case when a.acked_until >= k.week_start then a.acked_by end as acked_by,
    h.counted,
    l.first_seen,
    r.weeks_open,
    l.cumulative_waste::decimal(18, 6) as cumulative_waste,
    case
        when p.finding_key is null then 'new'
        when p.status = 'waste' and k.status = 'waste' and k.estimated_waste < p.estimated_waste then 'shrinking'
        when p.status = 'waste' and k.status = 'waste' and k.estimated_waste > p.estimated_waste then 'growing'
        else 'persisting'
    end as lifecycle,
    p.estimated_waste as previous_waste,
    b.pricing_basis
from keyed as k
inner join history as h on h.finding_key = k.finding_key and h.week_start = k.week_start
left join acks as a on a.finding_key = k.finding_key
left join lifecycle as l on l.finding_key = k.finding_key
left join current_run as r on r.finding_key = k.finding_key
left join previous as p on p.finding_key = k.finding_key
left join bases as b on b.finding_id = k.finding_id
where k.week_start = $week_start
order by
    case when list_contains($attention, k.category) then 1 else 0 end,
    case k.status when 'waste' then 0 when 'suspect' then 1 else 2 end,
    k.estimated_waste desc,
    k.rule_id,
    k.resource_id
