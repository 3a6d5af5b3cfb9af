-- grain: cost_hourly's billed rows (one row per hour x resource_id x currency, service, charge category,
--   account, tags that a billing line puts a share of cost in), with `month` (yyyy-MM of the hour) to
--   partition the Parquet by
-- depends_on: the temporary view `lines` (sql/spark/staging/<format>_line_items.sql, materialised once so
--             that line_key names the same line wherever it is read)
-- Spark SQL's form of the billed CTEs of sql/marts/cost_hourly.sql, with the same arithmetic: a line's
-- share of an hour is allocated(cost, share up to the hour's end) - allocated(cost, share up to its
-- start), the share a DOUBLE cast to DECIMAL(18, 12) and the product rounded to 12 decimals (the session
-- runs with spark.sql.decimalOperations.allowPrecisionLoss=false, so the product keeps its 24 decimals
-- until then). DuckDB's range(start, end, step) excludes `end`; Spark's sequence includes it, so the
-- sequences stop a microsecond before the end.
-- A line longer than 31 days (a commitment or contract term, an annual fee) is spread over its billing
-- period instead of its charge period, as sql/macros/macro_spread_period.sql's spread_start and spread_end
-- decide for DuckDB (the same test on epoch seconds, the same fallbacks): it lands in the month it was billed.
with spread as (
    select
        line_key,
        billed_cost,
        effective_cost,
        list_cost,
        billing_currency,
        provider_name,
        sub_account_id,
        region_id,
        service_category,
        service_name,
        charge_category,
        resource_id,
        x_instance_type,
        team,
        project,
        owner,
        case
            when long_line then coalesce(billing_period_start, period_month) else charge_period_start
        end as charge_period_start,
        case
            when long_line
                then coalesce(billing_period_end, coalesce(billing_period_start, period_month) + interval 1 month)
            else charge_period_end
        end as charge_period_end
    from (
        select
            *,
            unix_micros(cast(charge_period_end as timestamp)) / 1000000.0d
            - unix_micros(cast(charge_period_start as timestamp)) / 1000000.0d > 2678400 as long_line,
            to_timestamp_ntz(x_billing_period || '-01', 'yyyy-MM-dd') as period_month
        from lines
    )
),

lines as (
    select
        *,
        greatest(
            (unix_micros(cast(charge_period_end as timestamp)) - unix_micros(cast(charge_period_start as timestamp)))
            / 1000000.0d,
            0d
        ) as seconds
    from spread
),

long_resources as (
    select distinct resource_id
    from lines
    where seconds > 3600 and resource_id is not null
),

presence as (
    select
        resource_id,
        hour,
        min(seconds) as shortest
    from (
        select
            resource_id,
            seconds,
            explode(
                sequence(
                    date_trunc('HOUR', charge_period_start),
                    charge_period_end - interval 1 microsecond,
                    interval 1 hour
                )
            ) as hour
        from lines
        where
            resource_id is not null and seconds > 0 and seconds <= 86400
            and resource_id in (select resource_id from long_resources)
    )
    group by resource_id, hour
),

windows as (
    select
        l.line_key,
        min(p.hour) as first_hour,
        max(p.hour) + interval 1 hour as end_hour
    from lines as l
    inner join presence as p
        on
            p.resource_id = l.resource_id
            and p.hour >= date_trunc('HOUR', l.charge_period_start)
            and p.hour < l.charge_period_end
            and p.shortest < l.seconds
    where l.seconds > 3600 and l.resource_id is not null
    group by l.line_key
),

-- lines of an hour or less take their own period; only the longer ones are joined to their windows (a
-- join of every line would shuffle the whole bill for the few that need it)
spans as (
    select
        l.*,
        'hourly' as allocation,
        l.charge_period_start as span_start,
        l.charge_period_end as span_end
    from lines as l
    where l.seconds <= 3600
    union all
    select
        l.*,
        case when w.line_key is not null then 'resource_hours' else 'period' end as allocation,
        case
            when w.line_key is not null then greatest(w.first_hour, l.charge_period_start) else l.charge_period_start
        end as span_start,
        case when w.line_key is not null then least(w.end_hour, l.charge_period_end) else l.charge_period_end end
            as span_end
    from lines as l
    left join windows as w on w.line_key = l.line_key
    where coalesce(l.seconds > 3600, true)
),

hours as (
    select
        *,
        greatest(
            (unix_micros(cast(span_end as timestamp)) - unix_micros(cast(span_start as timestamp))) / 1000000.0d,
            0d
        ) as span_seconds,
        explode(
            case
                when span_end <= span_start then array(date_trunc('HOUR', span_start))
                else sequence(date_trunc('HOUR', span_start), span_end - interval 1 microsecond, interval 1 hour)
            end
        ) as hour
    from spans
),

shares as (
    select
        *,
        case
            when span_seconds = 0 then 0d
            else (
                unix_micros(cast(greatest(span_start, hour) as timestamp))
                - unix_micros(cast(span_start as timestamp))
            ) / 1000000.0d / span_seconds
        end as upto_start,
        case
            when span_seconds = 0 then 1d
            else (
                unix_micros(cast(least(span_end, hour + interval 1 hour) as timestamp))
                - unix_micros(cast(span_start as timestamp))
            ) / 1000000.0d / span_seconds
        end as upto_end
    from hours
),

-- allocated(cost, upto) of sql/macros/macro_allocated.sql, for the three costs at both ends of the hour
allocated as (
    select
        *,
        case
            when upto_end >= 1 then billed_cost
            when upto_end <= 0 then billed_cost * 0
            else cast(billed_cost * cast(upto_end as decimal(18, 12)) as decimal(38, 12))
        end
        - case
            when upto_start >= 1 then billed_cost
            when upto_start <= 0 then billed_cost * 0
            else cast(billed_cost * cast(upto_start as decimal(18, 12)) as decimal(38, 12))
        end as billed_part,
        case
            when upto_end >= 1 then effective_cost
            when upto_end <= 0 then effective_cost * 0
            else cast(effective_cost * cast(upto_end as decimal(18, 12)) as decimal(38, 12))
        end
        - case
            when upto_start >= 1 then effective_cost
            when upto_start <= 0 then effective_cost * 0
            else cast(effective_cost * cast(upto_start as decimal(18, 12)) as decimal(38, 12))
        end as effective_part,
        case
            when upto_end >= 1 then list_cost
            when upto_end <= 0 then list_cost * 0
            else cast(list_cost * cast(upto_end as decimal(18, 12)) as decimal(38, 12))
        end
        - case
            when upto_start >= 1 then list_cost
            when upto_start <= 0 then list_cost * 0
            else cast(list_cost * cast(upto_start as decimal(18, 12)) as decimal(38, 12))
        end as list_part
    from shares
)

select
    hour,
    resource_id,
    billing_currency,
    provider_name as provider,
    sub_account_id as account_id,
    region_id,
    service_category,
    service_name,
    charge_category,
    x_instance_type as instance_type,
    team,
    project,
    owner,
    case
        when bool_or(allocation = 'period') then 'period'
        when bool_or(allocation = 'resource_hours') then 'resource_hours'
        else 'hourly'
    end as allocation,
    count(*) as line_items,
    cast(sum(billed_part) as decimal(38, 12)) as billed_cost,
    cast(sum(effective_part) as decimal(38, 12)) as effective_cost,
    cast(sum(list_part) as decimal(38, 12)) as list_cost,
    'bill' as pricing_basis,
    cast(null as string) as pricing_inputs,
    date_format(hour, 'yyyy-MM') as month
from allocated
group by
    hour, resource_id, billing_currency, provider_name, sub_account_id, region_id, service_category,
    service_name, charge_category, x_instance_type, team, project, owner
