-- grain: one row per billing line of data transfer between regions, between zones or out to the internet
-- depends_on: billing_line_items, transfer_usage_types, aws_region_codes
-- The bill's data-transfer lines, classified by the built-in catalogue pipelines/catalog/transfer_usage_types.csv
-- (the first matching pattern by priority): AWS by the usage type (CUR lineItem/UsageType or
-- line_item_usage_type, FOCUS x_UsageType, kept in x_extra), whose region codes
-- (pipelines/catalog/aws_region_codes.csv) give the source and destination regions; Azure by the Bandwidth
-- meter's subcategory and name, Google Cloud by the SKU description (neither names the destination region).
-- Lines no pattern matches (storage, requests, instance hours) are not here.
-- Built by file (pipelines/transform/files.py): $files names the ingested files whose lines are built, and each
-- row keeps its x_file_id, so a file delivered again, or gone, rebuilds or drops its own rows only.
-- direction: inter_region | inter_zone | internet
-- source_region: region the data left (from the usage type, else the line's region)
-- destination_region: region the data went to; 'internet' for egress; NULL when the line does not say
-- bucket: the bucket name when the line's resource is an S3 bucket (its name or arn:aws:s3:::name), else NULL
-- quantity: consumed_quantity of the line (GB for transfer)
-- effective_cost: amortised cost of the line, in currency
-- x_file_id: the file the line came from (ingest_files.file_id)
with billed as not materialized (
    select * from billing_line_items where x_file_id in (select unnest($files::varchar[]))
),

-- each distinct (provider, x_extra, description, meter) of these lines, its usage type (x_extra parsed once)
-- and meter text: lines are classified by these, and only the lines of a classified key are read again
keys as (
    select
        provider_name,
        x_extra,
        charge_description,
        sku_meter,
        extra_usage_type(x_extra) as usage_type,
        -- Azure's charge description is its meter category, subcategory and name (the subcategory says
        -- Inter-Region); Google Cloud's is the SKU description
        concat_ws(' ', charge_description, sku_meter) as meter
    from (select distinct provider_name, x_extra, charge_description, sku_meter from billed)
),

kinds as (
    -- each distinct usage type / meter is classified once, then joined back to its lines
    select
        k.provider_name,
        k.x_extra,
        k.charge_description,
        k.sku_meter,
        k.usage_type,
        k.meter,
        t.direction,
        t.source,
        t.destination,
        t.pattern
    from keys as k
    inner join transfer_usage_types as t
        on case t.field
            when 'usage_type' then coalesce(regexp_matches(k.usage_type, t.pattern), false)
            when 'meter' then starts_with(lower(coalesce(k.provider_name, '')), lower(t.provider))
                and regexp_matches(k.meter, t.pattern)
            else false
        end
    qualify row_number() over (
        partition by k.provider_name, k.x_extra, k.charge_description, k.sku_meter order by t.priority
    ) = 1
),

matched as (
    select b.*, k.usage_type, k.meter, k.direction, k.source, k.destination, k.pattern
    from billed as b
    inner join kinds as k
        on k.provider_name is not distinct from b.provider_name
        and k.x_extra is not distinct from b.x_extra
        and k.charge_description is not distinct from b.charge_description
        and k.sku_meter is not distinct from b.sku_meter
),

regions as (
    select
        m.*,
        case
            when m.source like 'code:%' then coalesce(
                (select r.region_id from aws_region_codes as r
                 where r.code = case m.source when 'code:1' then regexp_extract(m.usage_type, m.pattern, 1)
                    when 'code:2' then regexp_extract(m.usage_type, m.pattern, 2) end),
                m.region_id
            )
            when m.source = 'line' or coalesce(m.source, '') = '' then m.region_id
            else m.source
        end as source_region,
        case
            when m.destination like 'code:%' then
                (select r.region_id from aws_region_codes as r
                 where r.code = case m.destination when 'code:1' then regexp_extract(m.usage_type, m.pattern, 1)
                    when 'code:2' then regexp_extract(m.usage_type, m.pattern, 2) end)
            when m.destination = 'line' then m.region_id
            when coalesce(m.destination, '') = '' then null
            else m.destination
        end as destination_region
    from matched as m
)

select
    charge_period_start,
    charge_period_end,
    provider_name as provider,
    coalesce(sub_account_id, billing_account_id) as account_id,
    resource_id,
    case
        when resource_id like 'arn:aws:s3:::%' then split_part(substr(resource_id, 14), '/', 1)
        when service_name ilike '%simple storage service%' or resource_type ilike 'bucket' then resource_id
    end as bucket,
    service_name,
    coalesce(usage_type, meter) as usage_type,
    direction,
    source_region,
    destination_region,
    consumed_quantity as quantity,
    consumed_unit as unit,
    effective_cost,
    billing_currency as currency,
    team,
    project,
    owner,
    x_source_format,
    x_source_file,
    x_source_row,
    x_file_id
from regions
