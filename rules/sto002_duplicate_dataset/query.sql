-- STO002 duplicate-dataset
-- depends_on: storage_datasets, storage_dataset_matches (marts only)
-- params: $min_shared_pct, $min_dataset_gib
-- Two dataset folders are copies when each has at least min_shared_pct of its bytes in the other. Files
-- match by a full-object checksum, by ETag (same size; multipart ETags only when the part counts agree) or
-- by a sampled fingerprint; a pair that reaches the threshold only with ambiguous matches (same path and
-- size, ETags of different part counts, no checksum) is `suspect`, never `waste`. The datasets are ranked
-- (in a region where GPU instances run first, then oldest, then by name); each copy is judged against the
-- best-ranked dataset it duplicates (its canonical copy); the best-ranked of a group gets no finding. A copy
-- in a region where GPU jobs run whose canonical copy is elsewhere saves those jobs' transfer: `suspect` at 0,
-- its storage weighed against transfer by NET001, so no dollar is on both rules.
with pairs as (
    select
        dataset,
        other,
        sum(bytes_checksum)::bigint as bytes_checksum,
        sum(bytes_etag)::bigint as bytes_etag,
        sum(bytes_sampled)::bigint as bytes_sampled,
        sum(bytes_ambiguous)::bigint as bytes_ambiguous,
        sum(bytes_checksum + bytes_etag + bytes_sampled)::bigint as bytes_exact,
        sum(bytes_checksum + bytes_etag + bytes_sampled + bytes_ambiguous)::bigint as bytes_all,
        sum((bytes_checksum + bytes_etag + bytes_sampled) / 1073741824 * price_per_gb_month) as monthly_exact,
        sum((bytes_checksum + bytes_etag + bytes_sampled + bytes_ambiguous) / 1073741824 * price_per_gb_month)
            as monthly_all,
        coalesce(sum(bytes_checksum + bytes_etag + bytes_sampled + bytes_ambiguous)
            filter (where price_per_gb_month is null), 0)::bigint as unpriced_bytes,
        arg_max(currency, bytes_all) filter (where currency is not null) as currency,
        string_agg(distinct price_source, '; ' order by price_source) as price_source
    from (
        select *, bytes_checksum + bytes_etag + bytes_sampled + bytes_ambiguous as bytes_all
        from storage_dataset_matches
    )
    group by dataset, other
),

ranked as (
    select
        *,
        row_number() over (order by in_job_region desc, first_modified, dataset) as rank
    from storage_datasets
    where size_bytes >= $min_dataset_gib * 1073741824
),

shares as (
    select
        p.*,
        q.bytes_exact as other_bytes_exact,
        q.bytes_all as other_bytes_all,
        a.size_bytes,
        a.rank,
        b.rank as other_rank,
        least(p.bytes_exact / a.size_bytes, q.bytes_exact / b.size_bytes) * 100 as shared_pct_exact,
        least(p.bytes_all / a.size_bytes, q.bytes_all / b.size_bytes) * 100 as shared_pct
    from pairs as p
    inner join pairs as q on q.dataset = p.other and q.other = p.dataset
    inner join ranked as a on a.dataset = p.dataset
    inner join ranked as b on b.dataset = p.other
),

copies as (
    select *
    from shares
    where shared_pct >= $min_shared_pct and other_rank < rank
    qualify row_number() over (partition by dataset order by other_rank) = 1
),

combined as (
    select
        c.*,
        d.store,
        d.bucket,
        d.region_id,
        d.provider,
        d.account_id,
        d.team,
        d.project,
        d.owner,
        d.objects,
        d.first_modified,
        d.job_regions,
        d.in_job_region,
        k.region_id as canonical_region,
        k.in_job_region as canonical_in_job_region,
        k.first_modified as canonical_first_modified,
        -- a copy in a region where GPU jobs run, of a dataset whose canonical copy is in another region, saves
        -- those jobs' cross-region transfer: not a duplicate to delete (NET001 weighs transfer against storage)
        coalesce(d.in_job_region and coalesce(d.region_id, '') <> coalesce(k.region_id, ''), false) as saves_transfer,
        case
            when coalesce(d.in_job_region and coalesce(d.region_id, '') <> coalesce(k.region_id, ''), false) then 'suspect'
            when c.shared_pct_exact >= $min_shared_pct and c.monthly_exact > 0 then 'waste'
            when c.shared_pct_exact >= $min_shared_pct then 'insufficient_data'
            else 'suspect'
        end as status,
        case when c.shared_pct_exact >= $min_shared_pct then c.monthly_exact else c.monthly_all end
            as monthly_cost,
        case when c.shared_pct_exact >= $min_shared_pct then c.bytes_exact else c.bytes_all end
            as bytes_copied
    from copies as c
    inner join ranked as d on d.dataset = c.dataset
    inner join ranked as k on k.dataset = c.other
),

described as (
    select
        *,
        monthly_cost * 7 / days_per_month() as weekly_cost,
        size_bytes / 1073741824 as gib,
        case
            when len(job_regions) = 0 then 'the oldest copy'
            when canonical_in_job_region then printf('the oldest copy in %s, where the GPU jobs run', canonical_region)
            else printf('the oldest copy; no copy is in %s, where the GPU jobs run', array_to_string(job_regions, ', '))
        end as why_canonical,
        case
            when len(job_regions) = 0 or region_id is null then null
            when not canonical_in_job_region then printf(
                'Jobs run in %s and read the canonical copy from %s: every read pays cross-region transfer.',
                array_to_string(job_regions, ', '), coalesce(canonical_region, 'another region')
            )
            when not in_job_region then printf(
                'Jobs run in %s; any job reading this copy from %s pays cross-region transfer on top of its '
                || 'storage: point them at the canonical copy.',
                array_to_string(job_regions, ', '), region_id
            )
        end as cross_region
    from combined
)

select
    dataset as resource_id,
    'dataset copy' as resource_type,
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
            '%s (%.1f GiB%s) is a copy of %s (%s): %.1f%% of its bytes match by %s; keeping it costs %s %.2f a '
            || 'week (%s %.2f a month).%s',
            dataset, gib, coalesce(', ' || region_id, ''), other, why_canonical, shared_pct_exact,
            case
                when bytes_checksum >= greatest(bytes_etag, bytes_sampled) then 'checksum'
                when bytes_etag >= bytes_sampled then 'ETag'
                else 'sampled fingerprint'
            end,
            currency, weekly_cost, currency, monthly_cost, coalesce(' ' || cross_region, '')
        )
        when 'suspect' then case when saves_transfer then printf(
            '%s (%.1f GiB, %s) is a copy of %s (%s), but GPU jobs run in %s: deleting it would make them read '
            || 'the copy in %s across regions. Not priced here: NET001 weighs the transfer a copy saves against '
            || 'its storage (%s %.2f a week) and prices the transfer when reading across regions costs more.',
            dataset, gib, region_id, other, why_canonical, region_id, coalesce(canonical_region, 'another region'),
            coalesce(currency, ''), coalesce(weekly_cost, 0)
        ) else printf(
            '%s (%.1f GiB) may be a copy of %s: %.1f%% of its bytes match by path and size, but only %.1f%% are '
            || 'proven (ETags of different part counts, no checksum); confirm with checksums before deleting '
            || '(it would save %s %.2f a week).',
            dataset, gib, other, shared_pct, shared_pct_exact, coalesce(currency, ''), coalesce(weekly_cost, 0)
        ) end
        else printf(
            '%s (%.1f GiB) is a copy of %s, but neither the bill nor prices.storage_gb_month prices its storage.',
            dataset, gib, other
        )
    end as reason,
    json_object(
        'canonical', other,
        'canonical_region', canonical_region,
        'canonical_first_modified', strftime(canonical_first_modified, '%Y-%m-%dT%H:%M:%SZ'),
        'why_canonical', why_canonical,
        'copy_region', region_id,
        'copy_first_modified', strftime(first_modified, '%Y-%m-%dT%H:%M:%SZ'),
        'job_regions', job_regions,
        'shared_pct', round(shared_pct, 2),
        'shared_pct_proven', round(shared_pct_exact, 2),
        'bytes', size_bytes,
        'objects', objects,
        'gib', round(gib, 3),
        'bytes_copied', bytes_copied,
        'matched_bytes', json_object(
            'checksum', bytes_checksum,
            'etag', bytes_etag,
            'sampled_fingerprint', bytes_sampled,
            'ambiguous', bytes_ambiguous
        ),
        'sampled_note', case when bytes_sampled > 0 then
            'file-system fingerprints of large files hash the size and evenly spaced blocks, not every byte'
        end,
        'unpriced_bytes', unpriced_bytes,
        'price_source', price_source,
        'weekly_cost', round(weekly_cost, 2),
        'monthly_cost', round(monthly_cost, 2),
        'cross_region', cross_region,
        'saves_transfer', saves_transfer
    ) as evidence,
    (case when status = 'waste' then round(weekly_cost, 6) else 0 end)::decimal(18, 6) as estimated_waste,
    currency,
    'bytes of the copy that match the canonical copy x the copy''s price per GB-month (GB = 2^30 bytes) x 7 / '
    || '30.44 days; the monthly run-rate is in the evidence' as waste_basis
from described
order by estimated_waste desc, resource_id
