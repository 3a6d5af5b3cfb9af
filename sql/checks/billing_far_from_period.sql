-- The billing periods of one landed file's lines (pipelines/ingest/billing/landed.py), each with its lines,
-- first data row and reach (how many periods from it the least lenient of its lines' kinds allows), and
-- the lines charged further from their billing period (x_billing_period) than their
-- kind of charge allows (how many, the first one's data row, kind, whether its start lies outside the bound, and
-- what it says). A line's kind is the first of the kinds (landed.py CHARGE_KINDS, bound as parallel lists,
-- one row per value) whose column holds one of its values; its charge period must start no more than
-- `back` periods before its billing period and end (exclusive) no more than `ahead` periods after it.
-- One pass over the file's lines, grouped first by billing period, kind columns and the months the charge
-- starts and ends in: whether a line is far depends on those alone, so the period arithmetic runs once
-- per group, not once per line. billing_columns (no rows) supplies the kind columns a file did not fill.
-- params: $f (file id), $kind_rank, $kind_name, $kind_column, $kind_value, $kind_back, $kind_ahead
with kinds as (
    select
        unnest($kind_rank) as rank,
        unnest($kind_name) as kind,
        unnest($kind_column) as col,
        unnest($kind_value) as val,
        unnest($kind_back) as back,
        unnest($kind_ahead) as ahead
),

file_lines as (
    select x_billing_period, charge_class, charge_category, charge_frequency, charge_period_start, charge_period_end, x_source_row
    from billing_columns
    union all by name
    from billing_lines
    where x_file_id = $f
),

months as (
    select
        x_billing_period,
        charge_class,
        charge_category,
        charge_frequency,
        date_trunc('month', charge_period_start) as start_month,
        date_trunc('month', greatest(charge_period_end - interval 1 microsecond, charge_period_start))
            as end_month,
        count(*) as n,
        min(x_source_row) as first_row,
        min(coalesce(x_source_row, 0)) as first_key,
        arg_min({'s': charge_period_start, 'e': charge_period_end}, coalesce(x_source_row, 0)) as first_line
    from file_lines
    group by all
),

kinded as (
    select
        m.*,
        arg_min(k.kind, k.rank) as kind,
        arg_min(k.back, k.rank) as back,
        arg_min(k.ahead, k.rank) as ahead
    from months as m
    inner join kinds as k
        on
            k.col is null
            or k.val = case k.col
                when 'charge_class' then m.charge_class
                when 'charge_category' then m.charge_category
                when 'charge_frequency' then m.charge_frequency
            end
    group by all
),

flagged as (
    select
        *,
        start_month < strptime(x_billing_period || '-01', '%Y-%m-%d') - to_months(back) as early,
        end_month >= strptime(x_billing_period || '-01', '%Y-%m-%d') + to_months(ahead + 1) as late,
        start_month >= strptime(x_billing_period || '-01', '%Y-%m-%d') + to_months(ahead + 1) as starts_late
    from kinded
)

select
    x_billing_period as period,
    sum(n)::bigint as n,
    min(first_row) as first_row,
    min(greatest(back, ahead)) as reach,
    coalesce(sum(n) filter (where early or late), 0)::bigint as far_n,
    min(first_row) filter (where early or late) as far_row,
    arg_min(kind, first_key) filter (where early or late) as far_kind,
    arg_min(early or starts_late, first_key) filter (where early or late) as far_start,
    arg_min(
        'billing period ' || x_billing_period || ', charge period '
        || strftime(first_line.s, '%Y-%m-%d %H:%M:%S') || ' to '
        || strftime(first_line.e, '%Y-%m-%d %H:%M:%S'),
        first_key
    ) filter (where early or late) as far_example
from flagged
group by 1
order by 1
