-- grain: one row per FOCUS line item of one file
-- depends_on: the file relation `_src` (FOCUS snake_case columns: VARCHAR from CSV, the Parquet types
--             otherwise; plus _row, _tags_raw and _x_*), built by pipelines/ingest/billing/focus.py;
--             `_billing_sets`, distinct x_extra sets (g = 2), filled by one aggregate pass over the
--             file or an earlier file of its billing period (billing/reconcile.py); `_billing_calendar` and
--             `_billing_tag_ids`, values looked up by their text (billing/lookups.py, stg_focus__calendar.sql,
--             stg_focus__tag_ids.sql)
-- Types (strict: a bad value fails the load, and the reader names its row and column), UTC timestamps,
-- canonical spellings of FOCUS enumerations. Each line keeps the id of its raw tags (x_tag_set, tag_set_id); the
-- sets, normalised once each, go to billing_tag_sets (stg_billing__tag_sets).
-- Values are the provider's own (a non-conformant one is reported by the FOCUS conformance check, not
-- changed), except that a file without ServiceSubcategory (FOCUS 1.0) gets `Other (<ServiceCategory>)`, the
-- one subcategory every category allows ($derive_subcategory).
with typed as (
    select
        _row,
        availability_zone,
        cast(billed_cost as decimal(38, 12)) as billed_cost,
        billing_account_id,
        billing_account_name,
        billing_account_type,
        upper(coalesce(billing_currency, $default_currency)) as billing_currency,
        case when bpe.k is not null then bpe.v else billing_ts(billing_period_end, $date_format) end
            as billing_period_end,
        case when bps.k is not null then bps.v else billing_ts(billing_period_start, $date_format) end
            as billing_period_start,
        capacity_reservation_id,
        canonical_value(capacity_reservation_status, ['Used', 'Unused']) as capacity_reservation_status,
        canonical_value(charge_category, ['Usage', 'Purchase', 'Tax', 'Credit', 'Adjustment']) as charge_category,
        canonical_value(charge_class, ['Correction']) as charge_class,
        charge_description,
        canonical_value(charge_frequency, ['One-Time', 'Recurring', 'Usage-Based']) as charge_frequency,
        case when cpe.k is not null then cpe.v else billing_ts(charge_period_end, $date_format) end
            as charge_period_end,
        case when cps.k is not null then cps.v else billing_ts(charge_period_start, $date_format) end
            as charge_period_start,
        canonical_value(commitment_discount_category, ['Spend', 'Usage']) as commitment_discount_category,
        commitment_discount_id,
        commitment_discount_name,
        cast(commitment_discount_quantity as double) as commitment_discount_quantity,
        canonical_value(commitment_discount_status, ['Used', 'Unused']) as commitment_discount_status,
        commitment_discount_type,
        commitment_discount_unit,
        cast(consumed_quantity as double) as consumed_quantity,
        consumed_unit,
        cast(contracted_cost as decimal(38, 12)) as contracted_cost,
        cast(contracted_unit_price as decimal(28, 12)) as contracted_unit_price,
        cast(effective_cost as decimal(38, 12)) as effective_cost,
        invoice_id,
        invoice_issuer_name,
        cast(list_cost as decimal(38, 12)) as list_cost,
        cast(list_unit_price as decimal(28, 12)) as list_unit_price,
        canonical_value(pricing_category, ['Standard', 'Dynamic', 'Committed', 'Other']) as pricing_category,
        pricing_currency,
        cast(pricing_currency_contracted_unit_price as decimal(28, 12))
            as pricing_currency_contracted_unit_price,
        cast(pricing_currency_effective_cost as decimal(38, 12)) as pricing_currency_effective_cost,
        cast(pricing_currency_list_unit_price as decimal(28, 12)) as pricing_currency_list_unit_price,
        cast(pricing_quantity as double) as pricing_quantity,
        pricing_unit,
        provider_name,
        publisher_name,
        region_id,
        region_name,
        resource_id,
        resource_name,
        resource_type,
        canonical_value(
            service_category,
            [
                'AI and Machine Learning', 'Analytics', 'Business Applications', 'Compute', 'Databases',
                'Developer Tools', 'Multicloud', 'Identity', 'Integration', 'Internet of Things',
                'Management and Governance', 'Media', 'Migration', 'Mobile', 'Networking', 'Security',
                'Storage', 'Web', 'Other'
            ]
        ) as service_category,
        service_name,
        service_subcategory,
        sku_id,
        sku_meter,
        nullif(trim_text(sku_price_details::varchar), '')::json as sku_price_details,
        sku_price_id,
        sub_account_id,
        sub_account_name,
        sub_account_type,
        case when tid.k is not null then tid.v else tag_set_id(_tags_raw) end as x_tag_set,
        -- the billing period when a looked-up timestamp gives it (else the final select computes it)
        case
            when bps.k is not null then bps.per
            when s.billing_period_start is null and cps.k is not null then cps.per
        end as _period,
        case when not $extra_per_line then _x_extra end as _x_extra_key,
        _x_extra as _x_extra_line,
        _x_instance_type,
        _x_usage_type,
        _x_gpu_count
    from _src as s
    -- values looked up rather than computed on each line (pipelines/ingest/billing/lookups.py): the same
    -- function of the same text, computed once per distinct text
    left join _billing_calendar as bps on bps.k = s._ts_billing_period_start
    left join _billing_calendar as bpe on bpe.k = s._ts_billing_period_end
    left join _billing_calendar as cps on cps.k = s._ts_charge_period_start
    left join _billing_calendar as cpe on cpe.k = s._ts_charge_period_end
    left join _billing_tag_ids as tid on tid.k = s._tags_raw
),

-- the file's other columns, written as JSON once per distinct combination of their values; or per line
-- ($extra_per_line) when the file's first lines showed them to vary per line
extra_sets as (
    select xh as h, to_json(x_extra) as x_extra
    from _billing_sets
    where g = 2 and x_extra is not null
),

enriched as (
    select
        typed.* exclude (_x_extra_key, _x_extra_line),
        -- per line ($extra_per_line, or a combination the sets lack: they may come from an earlier file
        -- of the billing period); CASE evaluates the ELSE branch only for the lines that reach it
        case when e.h is not null then e.x_extra else to_json(typed._x_extra_line) end as x_extra,
        coalesce(
            nullif(trim_text(_x_instance_type), ''),
            sku_price_details ->> 'InstanceType',
            nullif(regexp_extract(coalesce(_x_usage_type, ''), 'Usage:([a-z0-9][a-z0-9-]*\.[a-z0-9]+)$', 1), '')
        ) as x_instance_type,
        coalesce(try_cast(_x_gpu_count as integer), try_cast(sku_price_details ->> 'GpuCount' as integer))
            as x_gpu_count
    from typed
    left join extra_sets as e on e.h = typed._x_extra_key
)

select
    * exclude (_row, _x_instance_type, _x_usage_type, _x_gpu_count, service_subcategory, _period),
    case
        when $derive_subcategory and service_category is not null then 'Other (' || service_category || ')'
        else service_subcategory
    end as service_subcategory,
    $focus_version as x_focus_version,
    $file_id as x_file_id,
    _row as x_source_row,
    case
        when _period is not null then _period
        else strftime(coalesce(billing_period_start, charge_period_start), '%Y-%m')
    end as x_billing_period
from enriched
