-- grain: one row per Google Cloud billing export line (standard or resource-level), as CSV or NDJSON
-- depends_on: the file relation `_src` (canonical names below; `_credits` the sum of the line's credits,
--             `_labels_raw`/`_project_labels_raw` labels as JSON arrays or Python-repr text), built by
--             pipelines/ingest/billing/gcp.py
-- `cost` is before credits; credits are negative, so billed and effective cost = cost + credits (what
-- Google invoices). invoice.month is a month in US Pacific time: the billing period starts at its local
-- midnight, converted to UTC. Labels become tags (project labels added where the resource has no such
-- key once both are normalised): each line keeps the id of its two raw label sets (x_tag_set, tag_set_id), the
-- merged sets go to billing_tag_sets (stg_gcp__tag_sets.sql).
-- FOCUS 1.2 conformance: `cost` is at Google's contracted prices before credits (committed use discounts and
-- other credits are separate), so it is the ContractedCost; the export has no unit prices, so ContractedCost and
-- ListCost stand alone. Google Cloud is provider, publisher and invoice issuer. Units in FOCUS's unit format
-- (`gibibyte month` -> `GiB-Months`), services categorised through the catalogue (pipelines/catalog); tax
-- lines have no PricingQuantity or PricingUnit.
with typed as (
    select
        _row,
        billing_ts(usage_start_time, $date_format) as charge_period_start,
        billing_ts(usage_end_time, $date_format) as charge_period_end,
        cast(cost as decimal(38, 12)) as cost,
        coalesce(cast(_credits as decimal(38, 12)), 0) as credits,
        cast(cost_at_list as decimal(38, 12)) as cost_at_list,
        cast(usage_amount as double) as usage_amount,
        cast(usage_amount_in_pricing_units as double) as pricing_amount,
        nullif(trim_text(invoice_month), '') as invoice_month,
        upper(coalesce(nullif(trim_text(currency), ''), $default_currency)) as billing_currency,
        lower(nullif(trim_text(cost_type), '')) as cost_type,
        nullif(trim_text(billing_account_id), '') as billing_account_id,
        nullif(trim_text(service_description), '') as service_name,
        nullif(trim_text(sku_id), '') as sku_id,
        nullif(trim_text(sku_description), '') as sku_description,
        nullif(trim_text(project_id), '') as sub_account_id,
        nullif(trim_text(project_name), '') as sub_account_name,
        nullif(trim_text(location_region), '') as region,
        nullif(trim_text(location_location), '') as location,
        nullif(trim_text(location_zone), '') as availability_zone,
        nullif(trim_text(usage_unit), '') as usage_unit,
        nullif(trim_text(usage_pricing_unit), '') as pricing_unit,
        nullif(trim_text(resource_global_name), '') as resource_id,
        nullif(trim_text(resource_name), '') as resource_name,
        _labels_raw,
        _project_labels_raw,
        _machine_spec,
        _x_extra
    from _src
),

periods as (
    select
        *,
        timezone('UTC', timezone($invoice_timezone, strptime(invoice_month || '01', '%Y%m%d'))) as bp_start,
        timezone(
            'UTC', timezone($invoice_timezone, strptime(invoice_month || '01', '%Y%m%d') + interval 1 month)
        ) as bp_end
    from typed
),

categories as (
    select
        unnest($category_services) as service,
        unnest($category_names) as service_category,
        unnest($category_subcategories) as service_subcategory
),

units as (
    select
        unnest($unit_from) as unit,
        unnest($unit_to) as focus_unit
)

select
    p.availability_zone,
    (p.cost + p.credits)::decimal(38, 12) as billed_cost,
    p.billing_account_id,
    p.billing_currency,
    p.bp_end as billing_period_end,
    p.bp_start as billing_period_start,
    case
        when p.cost_type = 'tax' then 'Tax'
        when p.cost_type in ('adjustment', 'rounding_error') then 'Adjustment'
        else 'Usage'
    end as charge_category,
    p.sku_description as charge_description,
    case when p.cost_type = 'regular' or p.cost_type is null then 'Usage-Based' else 'One-Time' end
        as charge_frequency,
    p.charge_period_end,
    p.charge_period_start,
    p.usage_amount as consumed_quantity,
    coalesce(cu.focus_unit, p.usage_unit) as consumed_unit,
    p.cost::decimal(38, 12) as contracted_cost,
    (p.cost + p.credits)::decimal(38, 12) as effective_cost,
    'Google Cloud' as invoice_issuer_name,
    coalesce(p.cost_at_list, p.cost) as list_cost,
    case when p.cost_type = 'tax' then null else 'Standard' end as pricing_category,
    case when coalesce(p.cost_type, '') <> 'tax' then p.pricing_amount end as pricing_quantity,
    case when coalesce(p.cost_type, '') <> 'tax' then coalesce(pu.focus_unit, p.pricing_unit) end as pricing_unit,
    'Google Cloud' as provider_name,
    'Google Cloud' as publisher_name,
    coalesce(p.region, p.location) as region_id,
    coalesce(p.region, p.location) as region_name,
    p.resource_id,
    p.resource_name,
    coalesce(cat.service_category, 'Other') as service_category,
    p.service_name,
    coalesce(cat.service_subcategory, 'Other (Other)') as service_subcategory,
    p.sku_id,
    p.sku_description as sku_meter,
    p.sub_account_id,
    p.sub_account_name,
    case
        when p._labels_raw is not null or p._project_labels_raw is not null
            then tag_set_id([to_json(p._labels_raw)::varchar, to_json(p._project_labels_raw)::varchar])
    end as x_tag_set,
    nullif(trim_text(p._machine_spec), '') as x_instance_type,
    p._x_extra::json as x_extra,
    $file_id as x_file_id,
    p._row as x_source_row,
    coalesce(
        substr(p.invoice_month, 1, 4) || '-' || substr(p.invoice_month, 5, 2),
        strftime(p.charge_period_start, '%Y-%m')
    ) as x_billing_period,
    null::varchar as x_line_item_id
from periods as p
left join categories as cat on cat.service = p.service_name
left join units as pu on pu.unit = p.pricing_unit
left join units as cu on cu.unit = p.usage_unit
