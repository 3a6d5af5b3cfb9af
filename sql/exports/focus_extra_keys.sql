-- grain: one row per non-FOCUS column of the source files of one billing period ($period)
-- depends_on: focus
-- The keys of x_Extra (the source files' own columns) in the order they first appear in the export's line
-- order, each with the JSON types its values take (NULL aside): the export writes each key as a column
-- typed by them. Read over the period's distinct x_Extra values, which readers store once per combination.
with sets as (
    select
        x_Extra as e,
        min(x_SourceName || chr(0) || x_SourceFile || chr(0) || lpad(coalesce(x_SourceRow, 0)::varchar, 20, '0')) as first
    from focus
    where x_BillingPeriod = $period and x_Extra is not null
    group by x_Extra
),
keyed as (
    select first, unnest(json_keys(e)) as key, generate_subscripts(json_keys(e), 1) as i, e
    from sets
)
select
    key,
    list_sort(list_distinct(list(json_type(e, '$."' || replace(key, '"', '\"') || '"')))) as types
from keyed
group by key
order by min(first), min(i)
