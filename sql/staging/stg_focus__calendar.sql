-- grain: one row per text form of an hour around a FOCUS file's first lines (the temp table
--        `_billing_calendar` that stg_focus__billing_line_items.sql joins its four timestamps to)
-- depends_on: `_billing_sample`, the first 10,000 lines of the file relation `_src` of
--             pipelines/ingest/billing/focus.py (its `_ts_*` columns: the text of BillingPeriodStart/End and
--             ChargePeriodStart/End, NULL when the file types them itself)
-- A text timestamp costs billing_ts's checks and parse on every line (0.15 thread-s per million values,
-- about 0.4 inside the insert); an hourly bill holds a few thousand distinct ones. So each hour of the
-- month of the file's first 10,000 lines, with the month before and the two after, is written in every
-- text form seen among those lines, and `v` is billing_ts() of that text: a line whose text is a `k` takes
-- `v` by a join, any other line (another form, a minute past the hour, another year, a bad value) is
-- parsed or refused by billing_ts on its own line as before. Nothing when the source names its own
-- options.date_format ($date_format) or the file's timestamps are typed.
with texts_seen as materialized (
    select distinct t
    from (
        select unnest([_ts_billing_period_start, _ts_billing_period_end, _ts_charge_period_start, _ts_charge_period_end]) as t
        from _billing_sample
    )
    where t is not null and $date_format is null
),

seen as (
    select regexp_replace(t, '[0-9]', '9', 'g') as shape, date_trunc('month', try_strptime(left(t, 10), '%Y-%m-%d')) as month
    from texts_seen
),

-- the month most of the first lines' distinct texts are in
around as (
    select month from seen where month is not null group by month order by count(*) desc, month limit 1
),

hours as (
    select unnest(range(month - interval 1 month, month + interval 3 month, interval 1 hour)) as h
    from around
),

-- each hour in the forms billing exports write that billing_ts reads (macro_billing_ts.sql), those the
-- first lines show (by their shape: digits as 9)
texts as (
    select distinct k
    from (
        select strftime(h, '%Y-%m-%d %H:%M:%S') as k, '9999-99-99 99:99:99' as shape from hours
        union all select strftime(h, '%Y-%m-%dT%H:%M:%SZ'), '9999-99-99T99:99:99Z' from hours
        union all select strftime(h, '%Y-%m-%dT%H:%M:%S.000Z'), '9999-99-99T99:99:99.999Z' from hours
        union all select strftime(h, '%Y-%m-%d %H:%M:%S.000'), '9999-99-99 99:99:99.999' from hours
        union all select strftime(h, '%Y-%m-%d %H:%M:%S UTC'), '9999-99-99 99:99:99 UTC' from hours
        union all select strftime(h, '%Y-%m-%dT%H:%M:%S+00:00'), '9999-99-99T99:99:99+99:99' from hours
        union all select strftime(h, '%Y-%m-%d %H:%M:%S+00:00'), '9999-99-99 99:99:99+99:99' from hours
        union all select strftime(h, '%Y-%m-%dT%H:%M:%S'), '9999-99-99T99:99:99' from hours
        union all select strftime(h, '%Y-%m-%d'), '9999-99-99' from hours
    )
    where shape in (select shape from seen)
)

select k, billing_ts(k, $date_format) as v, strftime(billing_ts(k, $date_format), '%Y-%m') as per
from texts
