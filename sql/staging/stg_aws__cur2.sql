-- grain: one row per AWS Cost and Usage Report line item (CUR 2.0 / Data Exports, and legacy CUR)
-- depends_on: the file relation `_src` (CUR 2.0 snake_case column names; raw values: VARCHAR from CSV or the
--             Parquet types; `_tags_raw` JSON text, `_x_extra` a STRUCT of other fields), built by
--             pipelines/ingest/billing/aws_cur2.py and aws_cur.py (legacy `lineItem/UnblendedCost` ->
--             `line_item_unblended_cost`); `_billing_sets`, distinct x_extra sets (g = 2), filled by one aggregate
--             pass over the file or an earlier file of its billing period (billing/reconcile.py). Each line keeps the id of
--             its raw tags (x_tag_set, tag_set_id); the sets themselves go to billing_tag_sets (stg_billing__tag_sets)
-- Strict casts (a bad value fails the load; the reader then names the row and column); values are not
-- trimmed (CUR is machine-written, and trimming 25 columns of 10 M lines costs seconds). Costs follow the
-- CUR cost views: BilledCost = NetUnblendedCost else UnblendedCost; EffectiveCost = the amortised cost per
-- line item type (Savings Plan covered usage at its SP effective cost, negations and upfront fees at 0,
-- RI-covered usage at the RI effective cost, RI fees at their unused part). Split cost allocation rows
-- (EKS/ECS pods) keep their split cost in x_extra and carry 0 billed/effective cost: the parent instance's
-- line already has it, so the two are never added together.
-- FOCUS 1.2 conformance: ContractedUnitPrice is the net unblended rate, else the unblended rate (AWS's price
-- after negotiated discounts, before commitment discounts) and ContractedCost = ContractedUnitPrice x PricingQuantity; where there is no
-- rate (credits, refunds, tax) ContractedCost and ListCost are the billed cost, as the spec says for charges
-- priced from no unit price. Tax lines have no PricingQuantity, PricingUnit or unit prices. Units are spelled in
-- FOCUS's unit format and services get a category and subcategory through the catalogue (pipelines/catalog).
with typed as (
    select
        _row,
        line_item_line_item_type as line_type,
        split_line_item_parent_resource_id is not null as is_split,
        billing_ts(line_item_usage_start_date, $date_format) as charge_period_start,
        billing_ts(line_item_usage_end_date, $date_format) as charge_period_end,
        billing_ts(bill_billing_period_start_date, $date_format) as billing_period_start,
        billing_ts(bill_billing_period_end_date, $date_format) as billing_period_end,
        cast(line_item_unblended_cost as decimal(38, 12)) as unblended_cost,
        cast(line_item_net_unblended_cost as decimal(38, 12)) as net_unblended_cost,
        cast(pricing_public_on_demand_cost as decimal(38, 12)) as public_on_demand_cost,
        cast(pricing_public_on_demand_rate as decimal(28, 12)) as public_on_demand_rate,
        cast(line_item_unblended_rate as decimal(28, 12)) as unblended_rate,
        cast(line_item_net_unblended_rate as decimal(28, 12)) as net_unblended_rate,
        cast(line_item_usage_amount as double) as usage_amount,
        cast(savings_plan_savings_plan_effective_cost as decimal(38, 12)) as sp_effective_cost,
        cast(savings_plan_total_commitment_to_date as decimal(38, 12)) as sp_total_commitment,
        cast(savings_plan_used_commitment as decimal(38, 12)) as sp_used_commitment,
        cast(reservation_effective_cost as decimal(38, 12)) as ri_effective_cost,
        cast(reservation_unused_amortized_upfront_fee_for_billing_period as decimal(38, 12)) as ri_unused_upfront,
        cast(reservation_unused_recurring_fee as decimal(38, 12)) as ri_unused_recurring,
        nullif(savings_plan_savings_plan_a_r_n::varchar, '') as sp_arn,
        nullif(trim_text(reservation_reservation_a_r_n::varchar), '') as ri_arn,
        upper(coalesce(nullif(line_item_currency_code::varchar, ''), $default_currency)) as billing_currency,
        nullif(bill_payer_account_id::varchar, '') as billing_account_id,
        nullif(bill_payer_account_name::varchar, '') as billing_account_name,
        nullif(bill_invoice_id::varchar, '') as invoice_id,
        coalesce(nullif(bill_invoicing_entity::varchar, ''), 'Amazon Web Services, Inc.') as invoice_issuer_name,
        bill_bill_type::varchar as bill_type,
        nullif(line_item_legal_entity::varchar, '') as legal_entity,
        nullif(line_item_line_item_description::varchar, '') as charge_description,
        nullif(line_item_usage_account_id::varchar, '') as sub_account_id,
        nullif(line_item_usage_account_name::varchar, '') as sub_account_name,
        nullif(line_item_product_code::varchar, '') as product_code,
        line_item_usage_type::varchar as usage_type,
        nullif(line_item_availability_zone::varchar, '') as availability_zone,
        nullif(line_item_resource_id::varchar, '') as resource_id,
        nullif(pricing_unit::varchar, '') as pricing_unit,
        nullif(pricing_purchase_option::varchar, '') as purchase_option,
        coalesce(nullif(pricing_rate_code::varchar, ''), nullif(pricing_rate_id::varchar, ''))
            as sku_price_id,
        nullif(product_sku::varchar, '') as sku_id,
        nullif(product_region_code::varchar, '') as region_id,
        nullif(product_location::varchar, '') as region_name,
        nullif(product_product_name::varchar, '') as product_name,
        nullif(product_instance_type::varchar, '') as product_instance_type,
        nullif(identity_line_item_id::varchar, '') as x_line_item_id,
        _tags_raw,
        _x_extra as _x_extra_key
    from _src
),

costed as (
    select
        *,
        case when is_split then 0 else coalesce(net_unblended_cost, unblended_cost, 0) end as billed_cost,
        case
            when is_split then 0
            when line_type = 'SavingsPlanCoveredUsage' then coalesce(sp_effective_cost, 0)
            when line_type = 'SavingsPlanRecurringFee'
                then coalesce(sp_total_commitment, 0) - coalesce(sp_used_commitment, 0)
            when line_type in ('SavingsPlanNegation', 'SavingsPlanUpfrontFee') then 0
            when line_type = 'DiscountedUsage' then coalesce(ri_effective_cost, 0)
            when line_type = 'RIFee' then coalesce(ri_unused_upfront, 0) + coalesce(ri_unused_recurring, 0)
            when line_type = 'Fee' and ri_arn is not null then 0
            else coalesce(net_unblended_cost, unblended_cost, 0)
        end as effective_cost
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
        c.line_type = 'Tax' as is_tax,
        case when c.line_type <> 'Tax' then coalesce(u.focus_unit, c.pricing_unit) end as focus_unit,
        case when c.line_type <> 'Tax' then c.usage_amount end as quantity,
        case
            when c.line_type <> 'Tax' and coalesce(c.net_unblended_rate, c.unblended_rate) >= 0
                then coalesce(c.net_unblended_rate, c.unblended_rate)
        end as contracted_price
    from costed as c
    left join units as u on u.unit = c.pricing_unit
),

-- the provider's other fields, written as JSON once per distinct combination (line item type, usage type, ...)
extra_sets as (
    select xh as h, extra_json(x_extra) as x_extra
    from _billing_sets
    where g = 2
)

select
    c.availability_zone,
    c.billed_cost::decimal(38, 12) as billed_cost,
    c.billing_account_id,
    c.billing_account_name,
    c.billing_currency,
    c.billing_period_end,
    c.billing_period_start,
    case
        when c.line_type = 'Tax' then 'Tax'
        when c.line_type in ('Fee', 'RIFee', 'SavingsPlanUpfrontFee', 'SavingsPlanRecurringFee') then 'Purchase'
        when c.line_type = 'Credit' then 'Credit'
        when c.line_type = 'Refund' then 'Adjustment'
        else 'Usage'
    end as charge_category,
    c.charge_description,
    case
        when c.line_type in ('Fee', 'SavingsPlanUpfrontFee') or c.bill_type in ('Purchase', 'Refund') then 'One-Time'
        when c.line_type in ('RIFee', 'SavingsPlanRecurringFee', 'Tax') then 'Recurring'
        else 'Usage-Based'
    end as charge_frequency,
    c.charge_period_end,
    c.charge_period_start,
    case when c.sp_arn is not null then 'Spend' when c.ri_arn is not null then 'Usage' end
        as commitment_discount_category,
    coalesce(c.sp_arn, c.ri_arn) as commitment_discount_id,
    -- FOCUS: no status without a commitment id (a CUR without the ARN columns names no commitment)
    case
        when c.line_type in ('SavingsPlanCoveredUsage', 'DiscountedUsage') and coalesce(c.sp_arn, c.ri_arn) is not null
            then 'Used'
    end as commitment_discount_status,
    case when c.sp_arn is not null then 'Savings Plan' when c.ri_arn is not null then 'Reserved Instance' end
        as commitment_discount_type,
    case when c.line_type in ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage') then c.usage_amount end
        as consumed_quantity,
    case when c.line_type in ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage') then c.focus_unit end
        as consumed_unit,
    c.effective_cost::decimal(38, 12) as effective_cost,
    c.invoice_id,
    c.invoice_issuer_name,
    coalesce(c.public_on_demand_cost, c.billed_cost)::decimal(38, 12) as list_cost,
    case when not c.is_tax then c.public_on_demand_rate end as list_unit_price,
    c.contracted_price as contracted_unit_price,
    case
        when c.is_split then 0
        when c.contracted_price is not null and c.quantity is not null then c.contracted_price * c.quantity
        else c.billed_cost
    end::decimal(38, 12) as contracted_cost,
    case
        when c.line_type = 'Tax' then null
        when c.line_type in ('DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Committed'
        when c.purchase_option = 'Spot' or c.usage_type like '%SpotUsage%' then 'Dynamic'
        when c.line_type = 'Usage' then 'Standard'
        else 'Other'
    end as pricing_category,
    c.quantity as pricing_quantity,
    c.focus_unit as pricing_unit,
    'AWS' as provider_name,
    coalesce(c.legal_entity, 'Amazon Web Services, Inc.') as publisher_name,
    c.region_id,
    c.region_name,
    c.resource_id,
    coalesce(cat.service_category, 'Other') as service_category,
    coalesce(c.product_name, c.product_code) as service_name,
    coalesce(cat.service_subcategory, 'Other (Other)') as service_subcategory,
    c.sku_id,
    c.sku_price_id,
    c.sub_account_id,
    c.sub_account_name,
    tag_set_id(c._tags_raw) as x_tag_set,
    coalesce(
        c.product_instance_type,
        nullif(regexp_extract(coalesce(c.usage_type, ''), '(?:Box|Spot|DedicatedUsage|HostUsage)[^:]*:([a-z0-9-]+\.[a-z0-9]+)$', 1), '')
    ) as x_instance_type,
    -- a combination the sets lack (they may come from an earlier file of the billing period): built for its lines
    -- alone (CASE evaluates the ELSE branch only for the lines that reach it; COALESCE would for every line)
    case when e.h is not null then e.x_extra else extra_json(c._x_extra_key) end as x_extra,
    $file_id as x_file_id,
    c._row as x_source_row,
    strftime(coalesce(c.billing_period_start, c.charge_period_start), '%Y-%m') as x_billing_period,
    c.x_line_item_id
from priced as c
left join categories as cat on cat.service = c.product_code
left join extra_sets as e on e.h = c._x_extra_key
