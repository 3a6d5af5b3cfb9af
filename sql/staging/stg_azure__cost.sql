-- grain: one row per Azure Cost Management line item (one resource x meter x day)
-- depends_on: the file relation `_src` (canonical names below, VARCHAR), built by
--             pipelines/ingest/billing/azure.py from the EA, MCA (camelCase) or legacy usage-details columns
-- Each row is one day: the charge period is [Date, Date + 1 day). Azure's inclusive billing period end
-- (09/30/2023) becomes FOCUS's exclusive end (2023-10-01). `$dataset` says which export this is: in an
-- amortized export the cost is the effective (amortised) cost, and lines paid by a reservation or savings
-- plan purchase bill 0 (the purchase, which only the actual export shows, billed them); in an actual
-- export the cost is what was billed, and effective = billed. Each line keeps the id (tag_set_id) of its raw tags
-- (x_tag_set); the sets go to billing_tag_sets (stg_azure__tag_sets.sql).
-- FOCUS 1.2 conformance: ServiceName is MeterCategory (ConsumedService when there is none), and its category
-- and subcategory come from the catalogue by that same name, so one service name has one category. Units are
-- UnitOfMeasure in FOCUS's unit format ("10K" -> "10000 Units": Quantity counts blocks of the unit). Tax lines
-- have no PricingQuantity, PricingUnit or unit prices; a line without a price lists and contracts at its cost.
with typed as (
    select
        _row,
        billing_date(usage_date, $date_format) as day,
        billing_date(billing_period_start, $date_format) as bp_start,
        billing_date(billing_period_end, $date_format) as bp_end,
        cast(cost as decimal(38, 12)) as cost,
        cast(quantity as double) as quantity,
        cast(unit_price as decimal(28, 12)) as unit_price,
        cast(payg_price as decimal(28, 12)) as payg_price,
        upper(coalesce(nullif(trim_text(currency), ''), $default_currency)) as billing_currency,
        lower(nullif(trim_text(charge_type), '')) as charge_type,
        lower(replace(nullif(trim_text(pricing_model), ''), ' ', '')) as pricing_model,
        lower(replace(nullif(trim_text(frequency), ''), ' ', '')) as frequency,
        nullif(trim_text(billing_account_id), '') as billing_account_id,
        nullif(trim_text(billing_account_name), '') as billing_account_name,
        nullif(trim_text(invoice_id), '') as invoice_id,
        nullif(trim_text(subscription_id), '') as sub_account_id,
        nullif(trim_text(subscription_name), '') as sub_account_name,
        lower(nullif(trim_text(resource_id), '')) as resource_id,
        nullif(trim_text(resource_name), '') as resource_name,
        nullif(trim_text(resource_type), '') as resource_type,
        lower(nullif(trim_text(resource_location), '')) as region_id,
        nullif(trim_text(meter_region), '') as region_name,
        nullif(trim_text(availability_zone), '') as availability_zone,
        nullif(trim_text(meter_category), '') as meter_category,
        nullif(trim_text(meter_subcategory), '') as meter_subcategory,
        nullif(trim_text(meter_name), '') as meter_name,
        nullif(trim_text(meter_id), '') as meter_id,
        nullif(trim_text(product_name), '') as product_name,
        nullif(trim_text(unit_of_measure), '') as unit_of_measure,
        lower(nullif(trim_text(consumed_service), '')) as consumed_service,
        nullif(trim_text(publisher_name), '') as publisher_name,
        coalesce(nullif(trim_text(benefit_id), ''), nullif(trim_text(reservation_id), '')) as commitment_id,
        coalesce(nullif(trim_text(benefit_name), ''), nullif(trim_text(reservation_name), '')) as commitment_name,
        nullif(trim_text(additional_info), '') as additional_info,
        _tags_raw,
        _x_extra
    from _src
),

costed as (
    select
        *,
        coalesce(pricing_model in ('reservation', 'savingsplan'), false)
            or coalesce(charge_type in ('unusedreservation', 'unusedsavingsplan'), false) as paid_by_commitment,
        case
            when $dataset = 'actual' then cost
            when coalesce(pricing_model in ('reservation', 'savingsplan'), false)
                or coalesce(charge_type in ('unusedreservation', 'unusedsavingsplan'), false) then 0
            else cost
        end as billed_cost,
        cost as effective_cost
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
),

priced as (
    select
        c.*,
        coalesce(c.charge_type = 'tax', false) as is_tax,
        coalesce(c.meter_category, c.consumed_service) as service_name,
        coalesce(u.focus_unit, c.unit_of_measure) as focus_unit
    from costed as c
    left join units as u on u.unit = c.unit_of_measure
)

select
    c.availability_zone,
    c.billed_cost::decimal(38, 12) as billed_cost,
    c.billing_account_id,
    c.billing_account_name,
    c.billing_currency,
    coalesce(c.bp_end + interval 1 day, date_trunc('month', c.day) + interval 1 month) as billing_period_end,
    coalesce(c.bp_start, date_trunc('month', c.day)) as billing_period_start,
    case
        when c.charge_type = 'purchase' then 'Purchase'
        when c.charge_type = 'tax' then 'Tax'
        when c.charge_type in ('refund', 'credit') then 'Credit'
        when c.charge_type = 'roundingadjustment' then 'Adjustment'
        else 'Usage'
    end as charge_category,
    nullif(concat_ws(' - ', c.meter_category, c.meter_subcategory, c.meter_name), '') as charge_description,
    case
        when c.frequency = 'onetime' then 'One-Time'
        when c.frequency = 'recurring' then 'Recurring'
        when c.charge_type = 'purchase' then 'One-Time'
        else 'Usage-Based'
    end as charge_frequency,
    c.day + interval 1 day as charge_period_end,
    c.day as charge_period_start,
    case
        when c.pricing_model = 'savingsplan' or c.charge_type = 'unusedsavingsplan' then 'Spend'
        when c.pricing_model = 'reservation' or c.charge_type = 'unusedreservation' then 'Usage'
    end as commitment_discount_category,
    c.commitment_id as commitment_discount_id,
    c.commitment_name as commitment_discount_name,
    case
        when c.charge_type in ('unusedreservation', 'unusedsavingsplan') then 'Unused'
        when c.pricing_model in ('reservation', 'savingsplan') and c.charge_type = 'usage' then 'Used'
    end as commitment_discount_status,
    case
        when c.pricing_model = 'savingsplan' or c.charge_type = 'unusedsavingsplan' then 'Savings Plan'
        when c.pricing_model = 'reservation' or c.charge_type = 'unusedreservation' then 'Reservation'
    end as commitment_discount_type,
    c.quantity as consumed_quantity,
    c.focus_unit as consumed_unit,
    c.effective_cost::decimal(38, 12) as effective_cost,
    c.invoice_id,
    'Microsoft' as invoice_issuer_name,
    case
        when not c.is_tax and c.payg_price is not null then (c.payg_price * c.quantity)::decimal(38, 12)
        else c.billed_cost
    end::decimal(38, 12) as list_cost,
    case when not c.is_tax then c.payg_price end as list_unit_price,
    case when not c.is_tax then c.unit_price end as contracted_unit_price,
    case
        when not c.is_tax and c.unit_price is not null then (c.unit_price * c.quantity)::decimal(38, 12)
        else c.billed_cost
    end::decimal(38, 12) as contracted_cost,
    case
        when c.charge_type = 'tax' then null
        when c.pricing_model = 'spot' then 'Dynamic'
        when c.pricing_model in ('reservation', 'savingsplan') then 'Committed'
        when c.pricing_model = 'ondemand' or c.charge_type = 'usage' then 'Standard'
        else 'Other'
    end as pricing_category,
    case when not c.is_tax then c.quantity end as pricing_quantity,
    case when not c.is_tax then c.focus_unit end as pricing_unit,
    'Microsoft' as provider_name,
    coalesce(c.publisher_name, 'Microsoft') as publisher_name,
    c.region_id,
    c.region_name,
    c.resource_id,
    c.resource_name,
    c.resource_type,
    coalesce(cat.service_category, 'Other') as service_category,
    c.service_name,
    coalesce(cat.service_subcategory, 'Other (Other)') as service_subcategory,
    c.meter_id as sku_id,
    c.meter_name as sku_meter,
    c.sub_account_id,
    c.sub_account_name,
    tag_set_id(c._tags_raw) as x_tag_set,
    coalesce(
        try(c.additional_info::json ->> 'ServiceType'),
        try(c.additional_info::json ->> 'VMSize')
    ) as x_instance_type,
    c._x_extra::json as x_extra,
    $file_id as x_file_id,
    c._row as x_source_row,
    strftime(coalesce(c.bp_start, c.day), '%Y-%m') as x_billing_period,
    null::varchar as x_line_item_id
from priced as c
left join categories as cat on cat.service = c.service_name
