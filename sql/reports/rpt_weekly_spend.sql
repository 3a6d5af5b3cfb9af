-- grain: one row per billing currency: the week's spend and counted waste, and the previous week's
-- depends_on: cost_hourly, findings, finding_acks
-- params: $window_start, $window_end, $week_start, $prev_start, $attention
-- Spend is effective (amortised) cost, the same basis findings are priced on: billed_spend from the bill,
-- owned_spend and contract_spend from the `pricing:` cost models (modelled, never a bill). Waste counts `waste`
-- findings of waste rules that are not acknowledged for their week (suspect and insufficient_data
-- findings are listed, never added; attention rules are reported apart, never added).
with spend as (
    select
        billing_currency as currency,
        sum(effective_cost) filter (where hour >= $window_start) as spend,
        sum(billed_cost) filter (where hour >= $window_start) as billed,
        sum(effective_cost) filter (where hour >= $window_start and coalesce(pricing_basis, 'bill') = 'bill') as billed_spend,
        sum(effective_cost) filter (where hour >= $window_start and pricing_basis = 'owned') as owned_spend,
        sum(effective_cost) filter (where hour >= $window_start and pricing_basis = 'contract') as contract_spend,
        sum(effective_cost) filter (where hour < $window_start) as prev_spend
    from cost_hourly
    where hour >= $window_start::timestamp - interval 7 day and hour < $window_end
    group by billing_currency
),

acks as (
    select
        finding_key,
        arg_max_null(acked_until, acked_at) as acked_until
    from finding_acks
    group by finding_key
),

f as (
    select
        findings.*,
        coalesce(a.acked_until >= findings.week_start, false) as acknowledged,
        list_contains($attention, findings.category) as attention
    from findings
    left join acks as a
        on a.finding_key = substr(sha1(findings.rule_id || '|' || coalesce(findings.resource_id, '')), 1, 16)
    where findings.week_start in ($week_start, $prev_start)
),

waste as (
    select
        currency,
        sum(estimated_waste) filter (where week_start = $week_start and counted) as waste,
        count(*) filter (where week_start = $week_start and counted) as waste_findings,
        count(*) filter (where week_start = $week_start and not attention) as findings,
        sum(estimated_waste) filter (where week_start = $week_start and status = 'waste' and acknowledged
            and not attention) as acknowledged_waste,
        count(*) filter (where week_start = $week_start and acknowledged) as acknowledged_findings,
        count(*) filter (where week_start = $week_start and attention and status <> 'insufficient_data')
            as attention_findings,
        sum(estimated_waste) filter (where week_start = $prev_start and counted) as prev_waste,
        count(*) filter (where week_start = $prev_start) as prev_findings
    from (select *, status = 'waste' and not attention and not acknowledged as counted from f)
    group by currency
),

evaluated as (
    select count(*) filter (where week_start = $prev_start) > 0 as prev_evaluated
    from findings
    where week_start = $prev_start
)

select
    coalesce(s.currency, w.currency) as currency,
    coalesce(s.spend, 0)::decimal(18, 2) as spend,
    coalesce(s.billed, 0)::decimal(18, 2) as billed,
    coalesce(s.billed_spend, 0)::decimal(18, 2) as billed_spend,
    coalesce(s.owned_spend, 0)::decimal(18, 2) as owned_spend,
    coalesce(s.contract_spend, 0)::decimal(18, 2) as contract_spend,
    (coalesce(s.owned_spend, 0) + coalesce(s.contract_spend, 0))::decimal(18, 2) as modelled_spend,
    coalesce(w.waste, 0)::decimal(18, 2) as waste,
    case when s.spend > 0 then round(100 * coalesce(w.waste, 0) / s.spend, 1) end as waste_pct,
    coalesce(w.waste_findings, 0) as waste_findings,
    coalesce(w.findings, 0) as findings,
    coalesce(w.acknowledged_waste, 0)::decimal(18, 2) as acknowledged_waste,
    coalesce(w.acknowledged_findings, 0) as acknowledged_findings,
    coalesce(w.attention_findings, 0) as attention_findings,
    s.prev_spend::decimal(18, 2) as prev_spend,
    case when e.prev_evaluated then coalesce(w.prev_waste, 0)::decimal(18, 2) end as prev_waste,
    case when s.prev_spend > 0 then round(100 * (s.spend - s.prev_spend) / s.prev_spend, 1) end
        as spend_change_pct,
    case when e.prev_evaluated and s.prev_spend > 0
        then round(100 * coalesce(w.prev_waste, 0) / s.prev_spend, 1) end as prev_waste_pct
from spend as s
full outer join waste as w on w.currency = s.currency
cross join evaluated as e
where coalesce(s.spend, 0) <> 0 or coalesce(w.findings, 0) > 0 or coalesce(w.attention_findings, 0) > 0
order by spend desc
