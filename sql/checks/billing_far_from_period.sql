-- The billing periods of one landed file's lines (pipelines/ingest/billing/landed.py), each with its lines
-- and first data row, and the lines whose charge starts far from their billing period (x_billing_period):
-- more than $skew periods before it or after it (how many, the first one's data row, what it says). Only
-- the start is checked: a commitment purchase's charge period may run for years after it. One pass over
-- the file's lines.
-- params: $f (file id), $skew
with flagged as (
    select
        x_source_row,
        charge_period_start,
        charge_period_end,
        x_billing_period,
        charge_period_start < strptime(x_billing_period || '-01', '%Y-%m-%d') - to_months($skew)
        or charge_period_start >= strptime(x_billing_period || '-01', '%Y-%m-%d') + to_months($skew + 1) as far
    from billing_lines
    where x_file_id = $f
)

select
    x_billing_period as period,
    count(*) as n,
    min(x_source_row) as first_row,
    count(*) filter (where far) as far_n,
    min(x_source_row) filter (where far) as far_row,
    arg_min(
        'billing period ' || x_billing_period || ', charge period '
        || strftime(charge_period_start, '%Y-%m-%d %H:%M:%S') || ' to '
        || strftime(charge_period_end, '%Y-%m-%d %H:%M:%S'),
        coalesce(x_source_row, 0)
    ) filter (where far) as far_example
from flagged
group by 1
order by 1
