-- grain: one row per hour x resource_id x (currency, service, charge category, account, tags) that a billing
--   line or a `pricing:` entry puts a share of cost in (an hour nothing is billed or modelled for has no row);
--   the basis rules price from
-- depends_on: billing_line_items, int_cost_modelled
-- Lines of an hour or less land in the hours they overlap (by overlap, so partial hours get their share).
-- A line's hourly parts add up to the line exactly (the macro `allocated`): cost_hourly holds the bill to
-- the last of its 12 decimals.
-- Longer lines (daily, monthly) are spread evenly over the hours their resource existed within the line's
-- charge period — from the first to the last hour the resource appears on the bill in shorter lines
-- (e.g. a monthly EBS or RI fee over the hours the instance ran) — else over the whole charge period.
-- A line longer than 31 days (a commitment or contract term, an annual fee) is spread the same way over its
-- billing period instead of its charge period (the macros spread_start and spread_end): it lands in the
-- month it was billed, and a 5-year fee does not make every delivery of its month rebuild 60 months.
-- Built by month (pipelines/transform/months.py): the billed rows of the hours from $month_from to $month_to,
-- spread from the lines whose charge period overlaps $reach_from to $reach_to (the months' reach,
-- sql/intermediate/incremental/bill_months.sql), and the modelled rows when $modelled. A nightly bill
-- delivery rebuilds the months its files reach, not the whole history.
-- With `engine: spark` the billed rows (the CTEs below) are computed by Spark
-- (sql/spark/marts/cost_hourly_billed.sql) and this mart is a view over its Parquet and the modelled rows.
-- hour: UTC start of the hour
-- provider: billing_line_items.provider_name
-- account_id: billing_line_items.sub_account_id (AWS member account, Azure subscription, GCP project)
-- instance_type: billing_line_items.x_instance_type
-- allocation: how the row's cost reached the hour: 'hourly' (only lines of an hour or less),
-- 'resource_hours' (some of the cost was spread over the resource's hours on the bill), 'period' (some
-- was spread over the whole charge period), 'model' (priced by a `pricing:` entry, below)
-- line_items: billing lines with a share in the row
-- billed_cost: the hour's share of the lines' billed cost, in billing_currency
-- effective_cost: the hour's share of the lines' effective (amortised) cost: what the rules price from
-- list_cost: the hour's share of the lines' list cost
-- GPU hosts no bill lists are priced by the `pricing:` entry they match (int_cost_modelled, docs/gpu.md
-- "Cost models"): resource_id 'host:<host>', allocation 'model', effective_cost the modelled cost, no
-- billed_cost or list_cost (nothing was billed), team/project/owner from the host's inventory tags.
-- pricing_basis: how the hour was priced: 'bill' (billing lines), 'owned' or 'contract' (a cost model)
-- pricing_inputs: JSON of the model's inputs for the hour (rate, life, watts, PUE, kWh price, ...); NULL
-- for a bill
with spread as (
    select
        * replace (
            spread_start(charge_period_start, charge_period_end, billing_period_start, x_billing_period)
                as charge_period_start,
            spread_end(
                charge_period_start, charge_period_end, billing_period_start, billing_period_end, x_billing_period
            ) as charge_period_end
        )
    from billing_line_items
),

lines as (
    select
        x_line_key as line_key,
        *,
        greatest(epoch(charge_period_end) - epoch(charge_period_start), 0) as seconds
    from spread
    where
        charge_period_start < $reach_to
        and greatest(charge_period_end, charge_period_start + interval 1 microsecond) > $reach_from
),

-- hours each resource appears on the bill, with the shortest line that shows it there
presence as (
    select
        resource_id,
        hour,
        min(seconds) as shortest
    from (
        select
            resource_id,
            seconds,
            unnest(range(date_trunc('hour', charge_period_start), charge_period_end, interval 1 hour)) as hour
        from lines
        where resource_id is not null and seconds > 0 and seconds <= 86400
    )
    group by all
),

-- for each longer line: the first and last hour its resource appears in shorter lines within its period
windows as (
    select
        l.line_key,
        min(p.hour) as first_hour,
        max(p.hour) + interval 1 hour as end_hour
    from lines as l
    inner join presence as p
        on
            p.resource_id = l.resource_id
            and p.hour >= date_trunc('hour', l.charge_period_start)
            and p.hour < l.charge_period_end
            and p.shortest < l.seconds
    where l.seconds > 3600 and l.resource_id is not null
    group by l.line_key
),

spans as (
    select
        l.*,
        case
            when l.seconds <= 3600 then 'hourly'
            when w.line_key is not null then 'resource_hours'
            else 'period'
        end as allocation,
        case when w.line_key is not null then greatest(w.first_hour, l.charge_period_start) else l.charge_period_start end
            as span_start,
        case when w.line_key is not null then least(w.end_hour, l.charge_period_end) else l.charge_period_end end
            as span_end
    from lines as l
    left join windows as w on w.line_key = l.line_key
),

hours as (
    select
        *,
        greatest(epoch(span_end) - epoch(span_start), 0) as span_seconds,
        unnest(
            case
                when span_end <= span_start then [date_trunc('hour', span_start)]
                else range(date_trunc('hour', span_start), span_end, interval 1 hour)
            end
        ) as hour
    from spans
),

-- the share of the line's span before the hour's start and before its end (0 and 1 at the span's ends)
shares as (
    select
        *,
        case
            when span_seconds = 0 then 0
            else (epoch(greatest(span_start, hour)) - epoch(span_start)) / span_seconds
        end as upto_start,
        case
            when span_seconds = 0 then 1
            else (epoch(least(span_end, hour + interval 1 hour)) - epoch(span_start)) / span_seconds
        end as upto_end
    from hours
),

billed as (
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
        sum(allocated(billed_cost, upto_end) - allocated(billed_cost, upto_start))::decimal(38, 12) as billed_cost,
        sum(allocated(effective_cost, upto_end) - allocated(effective_cost, upto_start))::decimal(38, 12)
            as effective_cost,
        sum(allocated(list_cost, upto_end) - allocated(list_cost, upto_start))::decimal(38, 12) as list_cost,
        'bill' as pricing_basis,
        null::varchar as pricing_inputs
    from shares
    group by all
)

select * from billed
where hour >= $month_from and hour < $month_to
union all
select * from int_cost_modelled
where $modelled
