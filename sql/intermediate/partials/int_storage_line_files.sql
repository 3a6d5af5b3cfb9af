-- grain: one row per bill file x bucket x storage class x currency x charge period
-- depends_on: billing_line_items
-- The bill's storage lines (a quantity in GB-months or TB-months) of each file, summed per bucket, storage
-- class, currency and charge period (pipelines/transform/partials.py): what storage_prices prices buckets
-- from, kept up to date by file so a night reads the files delivered since the last, not the whole bill.
-- Storage class from SkuPriceDetails, else the AWS usage type; NULL when neither says.
-- $files names the files whose rows are built; a file delivered again, or gone, rebuilds or drops its own.
-- file_id: the file (ingest_files.file_id)
-- bill_resource: the line's resource_id, an S3 ARN cut to the bucket name
-- gb_months: the lines' quantity in GB-months (GB = 2^30 bytes; a TB-month is 1024 of them)
-- effective_cost: the lines' amortised cost, summed
-- top_cost: the largest effective_cost of one of the lines (storage_prices takes the currency of the
--   bucket's costliest line)
with lines as (
    select *
    from (
        select
            b.*,
            lower(regexp_replace(coalesce(b.consumed_unit, b.pricing_unit, ''), '[\s/_]', '', 'g')) as unit
        from billing_line_items as b
        where b.resource_id is not null
            and b.consumed_quantity > 0
            and b.x_file_id in (select unnest($files::varchar[]))
    )
    where regexp_matches(unit, '^(gb|gib|gigabyte|gibibyte|tb|tib|terabyte|tebibyte)s?-?(mo|month|months)$')
),

extras as (
    -- parsed once per distinct x_extra of the storage lines (sql/macros: extra_usage_type)
    select x_extra, coalesce(extra_usage_type(x_extra), '') as usage_type
    from (select distinct x_extra from lines)
),

storage_lines as (
    select
        l.x_file_id as file_id,
        regexp_replace(l.resource_id, '^arn:aws:s3:::', '') as bill_resource,
        upper(coalesce(
            nullif(trim(json_extract_string(l.sku_price_details, '$.StorageClass')), ''),
            nullif(trim(json_extract_string(l.sku_price_details, '$.storageClass')), ''),
            case
                when e.usage_type ilike '%TimedStorage-ByteHrs%' then 'STANDARD'
                when e.usage_type ilike '%TimedStorage-SIA-ByteHrs%' then 'STANDARD_IA'
                when e.usage_type ilike '%TimedStorage-ZIA-ByteHrs%' then 'ONEZONE_IA'
                when e.usage_type ilike '%TimedStorage-GIR-ByteHrs%' then 'GLACIER_IR'
                when e.usage_type ilike '%TimedStorage-GlacierByteHrs%' then 'GLACIER'
                when e.usage_type ilike '%TimedStorage-GDA-ByteHrs%' then 'DEEP_ARCHIVE'
                when e.usage_type ilike '%TimedStorage-INT%' then 'INTELLIGENT_TIERING'
                when e.usage_type ilike '%TimedStorage-RRS-ByteHrs%' then 'REDUCED_REDUNDANCY'
                when e.usage_type ilike '%TimedStorage-XZ%' then 'EXPRESS_ONEZONE'
            end
        )) as storage_class,
        l.consumed_quantity * case
            when regexp_matches(l.unit, '^(tb|tib|terabyte|tebibyte)s?-?(mo|month|months)$') then 1024
            else 1
        end as gb_months,
        l.effective_cost,
        l.billing_currency,
        l.charge_period_start,
        l.charge_period_end
    from lines as l
    left join extras as e on e.x_extra is not distinct from l.x_extra
)

select
    file_id,
    bill_resource,
    storage_class,
    billing_currency,
    charge_period_start,
    charge_period_end,
    sum(gb_months) as gb_months,
    sum(effective_cost) as effective_cost,
    max(effective_cost) as top_cost
from storage_lines
group by all
