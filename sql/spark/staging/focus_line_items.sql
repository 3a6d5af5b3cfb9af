-- grain: one row per FOCUS line item of the billing files the warehouse's ledger holds as loaded
-- depends_on: the temporary view `focus_raw` (the columns of CSV files as text, of a Parquet file in its
--             own types with MAP and STRUCT as JSON text, named in snake_case as
--             stg_focus__billing_line_items.sql names them, plus _x_instance_type, _x_usage_type and
--             _file, the ledger's uri of the file),
--             `tag_sets` (raw, team, project, owner: billing_tag_sets, handed over by the warehouse)
-- The columns cost_hourly reads, typed as stg_focus__billing_line_items.sql types them (text trimmed of
-- the Unicode space separators, as DuckDB's trim() trims): ANSI casts, so a
-- bad value fails the job; timestamps as UTC wall time (TIMESTAMP_NTZ); canonical spellings of the FOCUS
-- enumerations the mart groups by. Spark SQL's parameters are `:name`. Each line's line_key is given after
-- the files' typed lines are put together (pipelines/transform/spark/cost_hourly.py).
with typed as (
    select
        _file as source_file,
        cast(billed_cost as decimal(38, 12)) as billed_cost,
        cast(effective_cost as decimal(38, 12)) as effective_cost,
        cast(list_cost as decimal(38, 12)) as list_cost,
        upper(coalesce(nullif(regexp_replace(billing_currency, '^\\p{Zs}+|\\p{Zs}+$', ''), ''), :default_currency)) as billing_currency,
        cast(to_timestamp_ltz(charge_period_start) as timestamp_ntz) as charge_period_start,
        cast(to_timestamp_ltz(charge_period_end) as timestamp_ntz) as charge_period_end,
        cast(to_timestamp_ltz(billing_period_start) as timestamp_ntz) as billing_period_start,
        cast(to_timestamp_ltz(billing_period_end) as timestamp_ntz) as billing_period_end,
        coalesce(
            element_at(
                array('Usage', 'Purchase', 'Tax', 'Credit', 'Adjustment'),
                cast(
                    nullif(
                        array_position(
                            array('usage', 'purchase', 'tax', 'credit', 'adjustment'), lower(regexp_replace(charge_category, '^\\p{Zs}+|\\p{Zs}+$', ''))
                        ),
                        0
                    ) as int
                )
            ),
            nullif(regexp_replace(charge_category, '^\\p{Zs}+|\\p{Zs}+$', ''), '')
        ) as charge_category,
        coalesce(
            element_at(
                array(
                    'AI and Machine Learning', 'Analytics', 'Business Applications', 'Compute', 'Databases',
                    'Developer Tools', 'Multicloud', 'Identity', 'Integration', 'Internet of Things',
                    'Management and Governance', 'Media', 'Migration', 'Mobile', 'Networking', 'Security',
                    'Storage', 'Web', 'Other'
                ),
                cast(
                    nullif(
                        array_position(
                            array(
                                'ai and machine learning', 'analytics', 'business applications', 'compute',
                                'databases', 'developer tools', 'multicloud', 'identity', 'integration',
                                'internet of things', 'management and governance', 'media', 'migration',
                                'mobile', 'networking', 'security', 'storage', 'web', 'other'
                            ),
                            lower(regexp_replace(service_category, '^\\p{Zs}+|\\p{Zs}+$', ''))
                        ),
                        0
                    ) as int
                )
            ),
            nullif(regexp_replace(service_category, '^\\p{Zs}+|\\p{Zs}+$', ''), '')
        ) as service_category,
        provider_name,
        sub_account_id,
        region_id,
        service_name,
        nullif(regexp_replace(resource_id, '^\\p{Zs}+|\\p{Zs}+$', ''), '') as resource_id,
        coalesce(
            nullif(regexp_replace(_x_instance_type, '^\\p{Zs}+|\\p{Zs}+$', ''), ''),
            get_json_object(sku_price_details, '$.InstanceType'),
            nullif(regexp_extract(coalesce(_x_usage_type, ''), 'Usage:([a-z0-9][a-z0-9-]*\\.[a-z0-9]+)$', 1), '')
        ) as x_instance_type,
        tags as tags_raw
    from focus_raw
)

select
    l.source_file,
    l.billed_cost,
    l.effective_cost,
    l.list_cost,
    l.billing_currency,
    l.charge_period_start,
    l.charge_period_end,
    l.billing_period_start,
    l.billing_period_end,
    date_format(coalesce(l.billing_period_start, l.charge_period_start), 'yyyy-MM') as x_billing_period,
    l.charge_category,
    l.service_category,
    l.provider_name,
    l.sub_account_id,
    l.region_id,
    l.service_name,
    l.resource_id,
    l.x_instance_type,
    t.team,
    t.project,
    t.owner,
    l.tags_raw is not null and t.raw is null as tags_unknown
from typed as l
left join tag_sets as t on t.raw = l.tags_raw
