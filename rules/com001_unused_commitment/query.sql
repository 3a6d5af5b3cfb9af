-- COM001 unused-commitment
-- depends_on: commitment_lines (marts only)
-- params: $window_start, $window_end, $min_unused
-- Each commitment's used and unused amortised cost in the week: a line counts for the share of its charge
-- period inside the week (a monthly RIFee line spreads evenly over its month). Waste is the unused cost.
with in_window as (
    select
        *,
        epoch(least(charge_period_end, $window_end::timestamp) - greatest(charge_period_start, $window_start::timestamp))
            / epoch(charge_period_end - charge_period_start) as share
    from commitment_lines
    where charge_period_start < $window_end::timestamp
        and charge_period_end > $window_start::timestamp
        and charge_period_end > charge_period_start
),

main_currency as (
    -- a commitment is billed in one currency; lines in any other are left out and counted in the evidence
    select commitment_discount_id, mode(currency) as currency, count(*) as all_lines
    from in_window
    group by commitment_discount_id
),

commitments as (
    select
        commitment_discount_id,
        currency,
        any_value(commitment_discount_name order by commitment_discount_name nulls last) as name,
        any_value(commitment_discount_type order by commitment_discount_type nulls last) as commitment_type,
        any_value(commitment_discount_category order by commitment_discount_category nulls last) as category,
        any_value(provider order by provider nulls last) as provider,
        any_value(account_id order by account_id nulls last) as account_id,
        case when count(distinct region_id) = 1 then any_value(region_id) end as region_id,
        mode(team) as team,
        mode(project) as project,
        mode(owner) as owner,
        coalesce(sum(effective_cost * share) filter (where usage_status = 'Used'), 0) as used_cost,
        coalesce(sum(effective_cost * share) filter (where usage_status = 'Unused'), 0) as unused_cost,
        count(*) filter (where usage_status = 'Unused' and effective_cost > 0) as unused_lines,
        count(*) as lines,
        min(charge_period_start) filter (where usage_status = 'Unused' and effective_cost > 0) as first_unused,
        max(charge_period_end) filter (where usage_status = 'Unused' and effective_cost > 0) as last_unused,
        list(distinct x_source_file order by x_source_file) as files
    from in_window
    semi join main_currency using (commitment_discount_id, currency)
    group by commitment_discount_id, currency
),

combined as (
    select
        *,
        c.used_cost / nullif(c.used_cost + c.unused_cost, 0) as utilisation,
        m.all_lines - c.lines as other_currency_lines
    from commitments as c
    inner join main_currency as m using (commitment_discount_id)
    where c.unused_cost >= $min_unused
)

select
    commitment_discount_id as resource_id,
    lower(coalesce(commitment_type, 'commitment')) as resource_type,
    provider,
    account_id,
    region_id,
    team,
    project,
    owner,
    null::varchar as job_id,
    'waste' as status,
    printf(
        '%s %s was %.1f%% used this week: %s %.2f of its amortised cost paid for capacity nothing used '
        || '(%s %.2f used); the unused share is lost unless usage moves onto it.',
        coalesce(commitment_type, 'Commitment'), coalesce(name, commitment_discount_id), 100 * utilisation,
        currency, unused_cost, currency, used_cost
    ) as reason,
    json_object(
        'commitment_id', commitment_discount_id,
        'name', name,
        'type', commitment_type,
        'category', category,
        'used_cost', round(used_cost, 2),
        'unused_cost', round(unused_cost, 2),
        'utilisation', round(utilisation, 4),
        'unused_lines', unused_lines,
        'lines', lines,
        'other_currency_lines', other_currency_lines,
        'first_unused', strftime(first_unused, '%Y-%m-%dT%H:%M:%SZ'),
        'last_unused', strftime(last_unused, '%Y-%m-%dT%H:%M:%SZ'),
        'files', files[1:10]
    ) as evidence,
    round(unused_cost, 6)::decimal(18, 6) as estimated_waste,
    currency,
    'the amortised cost of the commitment''s unused share in the week (lines marked Unused; AWS: the recurring '
    || 'fee''s unused part), each line counted for the share of its charge period inside the week' as waste_basis
from combined
order by estimated_waste desc, resource_id
