-- The billing periods of one landed file's lines that no real bill has (pipelines/ingest/billing/landed.py):
-- before $earliest (the first public cloud bill) or after $latest (the month after today's, by the wall
-- clock), each with its lines, first data row and the first line's charge period.
-- params: $f (file id), $earliest, $latest (YYYY-MM)
select
    x_billing_period as period,
    count(*)::bigint as n,
    min(x_source_row) as first_row,
    arg_min(
        strftime(charge_period_start, '%Y-%m-%d %H:%M:%S') || ' to '
        || strftime(charge_period_end, '%Y-%m-%d %H:%M:%S'),
        coalesce(x_source_row, 0)
    ) as example
from billing_lines
where x_file_id = $f and (x_billing_period < $earliest or x_billing_period > $latest)
group by 1
order by 1
