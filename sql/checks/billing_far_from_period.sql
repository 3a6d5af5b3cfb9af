-- The billing periods of one landed file's lines (pipelines/ingest/billing/landed.py), each with its lines
-- and first data row, and the lines charged far from their billing period: more than $skew periods before
-- it, or ending more than $skew periods after it (how many, the first one's data row, what it says). The
-- billing period is the delivery's ($period, YYYY-MM-01, when its layout names one), else the line's own
-- (x_billing_period). One pass over the file's lines.
-- params: $f (file id), $skew, $period
with anchored as (
    select
        x_source_row,
        charge_period_start,
        charge_period_end,
        x_billing_period,
        strptime(x_billing_period || '-01', '%Y-%m-%d') as own,
        coalesce($period::timestamp, strptime(x_billing_period || '-01', '%Y-%m-%d')) as anchor
    from billing_lines
    where x_file_id = $f
),

flagged as (
    select
        *,
        charge_period_start < anchor - to_months($skew)
        or charge_period_end > anchor + to_months($skew + 1)
        or own < anchor - to_months($skew)
        or own > anchor + to_months($skew) as far
    from anchored
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
