-- grain: one row per billing line of log storage, log retention, log ingestion or metric storage
-- depends_on: billing_line_items, log_usage_types
-- The bill's log- and metric-storage lines, classified by the built-in catalogue
-- pipelines/catalog/log_usage_types.csv (the first matching pattern by priority, the line's service matching
-- too): CloudWatch Logs by the usage type (`USE1-TimedStorage-ByteHrs` stored bytes, `USE1-DataProcessing-Bytes`
-- ingested bytes, on AmazonCloudWatch: S3 bills storage under the same usage type), Amazon Managed Service for
-- Prometheus by the usage type (`USE1-AMP:MetricStorageByteHrs`), Azure Log Analytics by the meter
-- (Pay-as-you-go Data Retention, Data Ingestion), Google Cloud Logging by the SKU description (log retention,
-- Log Volume).
-- Built by file (pipelines/transform/files.py): $files names the ingested files whose lines are built, and each
-- row keeps its x_file_id, so a file delivered again, or gone, rebuilds or drops its own rows only.
-- kind: storage (every stored log byte, GB-months) | retention (only bytes kept past included_days, GB-months) |
--       ingestion (ingested bytes, GB) | metric_storage (every stored metric byte, GB-months)
-- log_group_arn: the CloudWatch log group of an AWS line (its resource id, without a trailing :*), else NULL
-- included_days: days of retention the provider includes before a retention line bills (Azure 31, Google 30)
-- quantity: consumed_quantity of the line (GB-months of storage; GB ingested, bytes for Google's Log Volume)
-- x_file_id: the file the line came from (ingest_files.file_id)
with billed as not materialized (
    select * from billing_line_items where x_file_id in (select unnest($files::varchar[]))
),

-- each distinct (provider, x_extra, description, meter, service) of these lines and what it says (x_extra
-- parsed once): lines are classified by these, and only the lines of a classified key are read again
keys as (
    select
        provider_name,
        x_extra,
        charge_description,
        sku_meter,
        service_name,
        extra_usage_type(x_extra) as usage_type,
        concat_ws(' ', charge_description, sku_meter) as meter,
        concat_ws(' ', service_name, extra_cur_product_code(x_extra), extra_cur2_product_code(x_extra)) as service
    from (select distinct provider_name, x_extra, charge_description, sku_meter, service_name from billed)
),

kinds as (
    -- each distinct usage type / meter / service is classified once, then joined back to its lines
    select
        k.provider_name, k.x_extra, k.charge_description, k.sku_meter, k.service_name, k.usage_type, k.meter,
        t.kind, t.included_days
    from keys as k
    inner join log_usage_types as t
        on starts_with(lower(coalesce(k.provider_name, '')), lower(t.provider))
        and regexp_matches(coalesce(k.service, ''), t.service)
        and case t.field
            when 'usage_type' then coalesce(regexp_matches(k.usage_type, t.pattern), false)
            when 'meter' then regexp_matches(k.meter, t.pattern)
            else false
        end
    qualify row_number() over (
        partition by k.provider_name, k.x_extra, k.charge_description, k.sku_meter, k.service_name
        order by t.priority
    ) = 1
)

select
    l.charge_period_start,
    l.charge_period_end,
    l.provider_name as provider,
    coalesce(l.sub_account_id, l.billing_account_id) as account_id,
    l.region_id,
    l.resource_id,
    case
        when l.resource_id like 'arn:aws%:logs:%:log-group:%' then regexp_replace(l.resource_id, ':\*$', '')
    end as log_group_arn,
    l.service_name,
    coalesce(k.usage_type, k.meter) as usage_type,
    k.kind,
    k.included_days,
    l.consumed_quantity as quantity,
    l.consumed_unit as unit,
    l.effective_cost,
    l.billing_currency as currency,
    l.team,
    l.project,
    l.owner,
    l.x_source_format,
    l.x_source_file,
    l.x_file_id
from billed as l
inner join kinds as k
    on k.provider_name is not distinct from l.provider_name
    and k.x_extra is not distinct from l.x_extra
    and k.charge_description is not distinct from l.charge_description
    and k.sku_meter is not distinct from l.sku_meter
    and k.service_name is not distinct from l.service_name
