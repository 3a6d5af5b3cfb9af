-- The billing periods of one landed file's lines (pipelines/ingest/billing/landed.py), each with its lines
-- and first data row, and the lines whose charge starts far from their billing period (x_billing_period):
-- more than $skew periods before it or after it (how many, the first one's data row, what it says). Only
-- the start is checked: a commitment purchase's charge period may run for years after it. One pass over
-- the file's lines, grouped first by billing period and the month the charge starts in: whether a line is
-- far depends on those two alone, so the period arithmetic runs once per group, not once per line.
-- params: $f (file id), $skew
with months as (
    select
        x_billing_period,
        date_trunc('month', charge_period_start) as start_month,
        count(*) as n,
        min(x_source_row) as first_row,
        min(coalesce(x_source_row, 0)) as first_key,
        arg_min({'s': charge_period_start, 'e': charge_period_end}, coalesce(x_source_row, 0)) as first_line
    from billing_lines
    where x_file_id = $f
    group by all
),

flagged as (
    select
        *,
        start_month < strptime(x_billing_period || '-01', '%Y-%m-%d') - to_months($skew)
        or start_month >= strptime(x_billing_period || '-01', '%Y-%m-%d') + to_months($skew + 1) as far
    from months
)

select
    x_billing_period as period,
    sum(n)::bigint as n,
    min(first_row) as first_row,
    coalesce(sum(n) filter (where far), 0)::bigint as far_n,
    min(first_row) filter (where far) as far_row,
    arg_min(
        'billing period ' || x_billing_period || ', charge period '
        || strftime(first_line.s, '%Y-%m-%d %H:%M:%S') || ' to '
        || strftime(first_line.e, '%Y-%m-%d %H:%M:%S'),
        first_key
    ) filter (where far) as far_example
from flagged
group by 1
order by 1
