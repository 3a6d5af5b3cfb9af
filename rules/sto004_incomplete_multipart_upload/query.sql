-- STO004 incomplete-multipart-upload
-- depends_on: storage_incomplete_uploads (marts only)
-- params: $window_end, $min_age_days
-- One finding per bucket: multipart uploads started more than min_age_days before the week's end and
-- neither completed nor aborted; their parts are stored and billed. Priced: the parts' bytes x the bucket's
-- price per GB-month for the upload's storage class x 7 / 30.44.
with stale as (
    select
        *,
        size_bytes / 1073741824 * price_per_gb_month as monthly_cost
    from storage_incomplete_uploads
    where initiated <= $window_end::timestamp - to_days(cast($min_age_days as integer))
),

buckets as (
    select
        store,
        bucket,
        any_value(region_id) filter (where region_id is not null) as region_id,
        any_value(provider) filter (where provider is not null) as provider,
        any_value(account_id) filter (where account_id is not null) as account_id,
        any_value(team) filter (where team is not null) as team,
        any_value(project) filter (where project is not null) as project,
        any_value(owner) filter (where owner is not null) as owner,
        count(*) as uploads,
        sum(parts)::bigint as parts,
        sum(size_bytes)::bigint as size_bytes,
        count(*) filter (where size_bytes is null) as uploads_unsized,
        min(initiated) as oldest,
        sum(monthly_cost) as monthly_cost,
        arg_max(currency, size_bytes) filter (where currency is not null) as currency,
        string_agg(distinct price_source, '; ' order by price_source) as price_source,
        list(
            {'key': key, 'upload_id': upload_id, 'initiated': strftime(initiated, '%Y-%m-%dT%H:%M:%SZ'),
             'parts': parts, 'bytes': size_bytes}
            order by size_bytes desc nulls last, key
        ) as sample
    from stale
    group by store, bucket
),

combined as (
    select
        *,
        coalesce(size_bytes, 0) / 1073741824 as gib,
        monthly_cost * 7 / days_per_month() as weekly_cost,
        case when monthly_cost > 0 then 'waste' else 'insufficient_data' end as status
    from buckets
)

select
    case when store = 's3' then 's3://' || bucket || '/' else bucket end as resource_id,
    'bucket' as resource_type,
    provider,
    account_id,
    region_id,
    team,
    project,
    owner,
    null::varchar as job_id,
    status,
    case status
        when 'waste' then printf(
            '%d multipart upload(s) in %s started more than %d days ago (the oldest on %s) were never completed; '
            || 'their %d part(s), %.1f GiB, cost %s %.2f a week (%s %.2f a month).',
            uploads, bucket, $min_age_days, strftime(oldest, '%Y-%m-%d'), coalesce(parts, 0), gib, currency,
            weekly_cost, currency, monthly_cost
        )
        else printf(
            '%d multipart upload(s) in %s started more than %d days ago were never completed, but their size '
            || '(parts not listed) or price is unknown.',
            uploads, bucket, $min_age_days
        )
    end as reason,
    json_object(
        'uploads', uploads,
        'parts', parts,
        'bytes', size_bytes,
        'gib', round(gib, 3),
        'uploads_without_size', uploads_unsized,
        'oldest_initiated', strftime(oldest, '%Y-%m-%dT%H:%M:%SZ'),
        'largest_uploads', sample[1:20],
        'price_source', price_source,
        'weekly_cost', round(weekly_cost, 2),
        'monthly_cost', round(monthly_cost, 2),
        'as_of', strftime($window_end::timestamp, '%Y-%m-%dT%H:%M:%SZ')
    ) as evidence,
    (case when status = 'waste' then round(weekly_cost, 6) else 0 end)::decimal(18, 6) as estimated_waste,
    currency,
    'bytes of the incomplete uploads'' parts x the bucket''s price per GB-month (GB = 2^30 bytes) x 7 / 30.44 '
    || 'days; the monthly run-rate is in the evidence' as waste_basis
from combined
order by estimated_waste desc, resource_id
