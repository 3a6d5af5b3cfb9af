-- NET001 cross-region-transfer
-- depends_on: transfer_lines, storage_datasets, storage_dataset_matches, jobs_enriched (marts only)
-- params: $window_start, $window_end, $min_transfer, $min_shared_pct
-- The bill's inter-region and inter-zone transfer lines in the week, per resource and region pair (a line
-- counts for the share of its charge period inside the week). Transfer out of a bucket that holds datasets
-- into the region where the readers' jobs run is avoidable by a copy there: a copy that already exists costs
-- nothing more, a new one costs its datasets' storage for the week. Waste = transfer - that storage, only
-- when the transfer is the more expensive side. Transfer no inventory explains, without a destination, or
-- between zones is `suspect` at 0.
with in_window as (
    select
        *,
        epoch(least(charge_period_end, $window_end::timestamp) - greatest(charge_period_start, $window_start::timestamp))
            / epoch(charge_period_end - charge_period_start) as share
    from transfer_lines
    where direction in ('inter_region', 'inter_zone')
        and charge_period_start < $window_end::timestamp
        and charge_period_end > $window_start::timestamp
        and charge_period_end > charge_period_start
),

flows as (
    select
        resource_id,
        bucket,
        direction,
        source_region,
        destination_region,
        currency,
        any_value(provider order by provider nulls last) as provider,
        any_value(account_id order by account_id nulls last) as account_id,
        mode(team) as line_team,
        mode(project) as project,
        mode(owner) as owner,
        sum(effective_cost * share) as transfer_cost,
        sum(quantity * share) as quantity,
        any_value(unit order by unit nulls last) as unit,
        count(*) as lines,
        list(distinct usage_type order by usage_type) as usage_types,
        min(charge_period_start) as first_line,
        max(charge_period_end) as last_line,
        list(distinct x_source_file order by x_source_file) as files
    from in_window
    group by resource_id, bucket, direction, source_region, destination_region, currency
    having sum(effective_cost * share) >= $min_transfer
),

dataset_copies as (
    -- each dataset's copies by region: a dataset folder elsewhere holding at least min_shared_pct of its
    -- bytes by proven matches (checksum, ETag, sampled fingerprint)
    select a.dataset, b.region_id, list(distinct m.other order by m.other) as copies
    from (
        select dataset, other, sum(bytes_checksum + bytes_etag + bytes_sampled) as bytes
        from storage_dataset_matches
        group by dataset, other
    ) as m
    inner join storage_datasets as a on a.dataset = m.dataset
    inner join storage_datasets as b on b.dataset = m.other
    where m.bytes >= a.size_bytes * $min_shared_pct / 100 and b.region_id is not null
    group by a.dataset, b.region_id
),

bucket_datasets as (
    -- per flow: the datasets in its bucket, which of them already have a copy in the destination region,
    -- and the monthly storage of those that have none (what a new copy there would cost)
    select
        f.resource_id,
        f.direction,
        f.destination_region,
        f.currency,
        list(d.dataset order by d.dataset) as datasets,
        sum(d.size_bytes)::bigint as dataset_bytes,
        list(c.copies) filter (where c.copies is not null) as local_copies,
        coalesce(sum(d.size_bytes) filter (where c.copies is null), 0)::bigint as bytes_to_copy,
        coalesce(sum(d.monthly_cost) filter (where c.copies is null), 0) as copy_monthly_cost,
        coalesce(sum(d.unpriced_bytes) filter (where c.copies is null), 0)::bigint as unpriced_bytes
    from flows as f
    inner join storage_datasets as d on d.bucket = f.bucket and d.store = 's3'
    left join dataset_copies as c on c.dataset = d.dataset and c.region_id = f.destination_region
    group by f.resource_id, f.direction, f.destination_region, f.currency
),

readers as (
    select
        region_id,
        list(distinct team order by team) filter (where team is not null) as teams,
        count(*) as jobs
    from jobs_enriched
    where started_at < $window_end::timestamp
        and coalesce(ended_at, $window_end::timestamp) > $window_start::timestamp
        and region_id is not null
    group by region_id
),

judged as (
    select
        f.*,
        b.datasets,
        b.dataset_bytes,
        flatten(coalesce(b.local_copies, [])) as local_copies,
        b.bytes_to_copy,
        b.unpriced_bytes,
        b.copy_monthly_cost * 7 / days_per_month() as copy_weekly_cost,
        coalesce(r.teams, []) as reader_teams,
        coalesce(r.jobs, 0) as reader_jobs,
        f.transfer_cost - coalesce(b.copy_monthly_cost * 7 / days_per_month(), 0) as saving,
        case
            when f.direction = 'inter_zone' then 'suspect'
            when f.destination_region is null then 'suspect'
            when b.datasets is null then 'suspect'
            when b.unpriced_bytes > 0 then 'insufficient_data'
            when f.transfer_cost - b.copy_monthly_cost * 7 / days_per_month() > 0 then 'waste'
        end as status
    from flows as f
    left join bucket_datasets as b
        on b.resource_id = f.resource_id and b.direction = f.direction
        and coalesce(b.destination_region, '') = coalesce(f.destination_region, '') and b.currency = f.currency
    left join readers as r on r.region_id = f.destination_region
),

described as (
    select
        *,
        coalesce(bucket, resource_id, 'unknown resource') as what,
        case when len(reader_teams) = 1 then reader_teams[1] else line_team end as team,
        case
            when len(reader_teams) > 0 then printf(
                '%d job(s) of %s ran in %s', reader_jobs, array_to_string(reader_teams, ', '), destination_region
            )
            when destination_region is not null then printf('no job on record ran in %s', destination_region)
        end as readers_text
    from judged
    where status is not null
)

select
    coalesce(resource_id, 'unknown resource') || ' -> ' || coalesce(destination_region, direction) as resource_id,
    case direction when 'inter_zone' then 'inter-zone transfer' else 'inter-region transfer' end as resource_type,
    provider,
    account_id,
    source_region as region_id,
    team,
    project,
    owner,
    null::varchar as job_id,
    status,
    case
        when status = 'waste' and bytes_to_copy = 0 then printf(
            '%s (%s) sent %.1f %s to %s this week for %s %.2f of cross-region transfer (%s), yet a copy of its '
            || 'data is already in %s (%s): reading that copy would have avoided all of it.',
            what, source_region, quantity, coalesce(unit, 'GB'), destination_region, currency, transfer_cost,
            coalesce(readers_text, 'readers unknown'), destination_region, array_to_string(local_copies, ', ')
        )
        when status = 'waste' then printf(
            '%s (%s) sent %.1f %s to %s this week for %s %.2f of cross-region transfer (%s); a copy of its '
            || 'datasets (%.1f GiB) in %s would cost %s %.2f a week to store, so it would save %s %.2f.',
            what, source_region, quantity, coalesce(unit, 'GB'), destination_region, currency, transfer_cost,
            coalesce(readers_text, 'readers unknown'), bytes_to_copy / 1073741824, destination_region, currency,
            copy_weekly_cost, currency, saving
        )
        when status = 'insufficient_data' then printf(
            '%s (%s) sent %s %.2f of cross-region transfer to %s this week, but neither the bill nor '
            || 'prices.storage_gb_month prices its datasets, so the cost of a copy there is unknown.',
            what, source_region, currency, transfer_cost, destination_region
        )
        when direction = 'inter_zone' then printf(
            '%s paid %s %.2f this week for transfer between zones of %s; keeping data and compute in one zone '
            || 'avoids it, but the bill cannot tell replication by design from misplaced reads.',
            what, currency, transfer_cost, source_region
        )
        when destination_region is null then printf(
            '%s paid %s %.2f this week for transfer out of %s to another region the bill does not name; '
            || 'find its readers before moving data.',
            what, currency, transfer_cost, coalesce(source_region, 'its region')
        )
        else printf(
            '%s (%s) sent %s %.2f of cross-region transfer to %s this week (%s), but no dataset inventory '
            || 'says what it carries; find what reads it before moving data.',
            what, coalesce(source_region, 'region unknown'), currency, transfer_cost, destination_region,
            coalesce(readers_text, 'readers unknown')
        )
    end as reason,
    json_object(
        'resource', resource_id,
        'bucket', bucket,
        'direction', direction,
        'source_region', source_region,
        'destination_region', destination_region,
        'usage_types', usage_types,
        'quantity', round(quantity, 3),
        'unit', unit,
        'transfer_cost', round(transfer_cost, 2),
        'lines', lines,
        'first_line', strftime(first_line, '%Y-%m-%dT%H:%M:%SZ'),
        'last_line', strftime(last_line, '%Y-%m-%dT%H:%M:%SZ'),
        'datasets', datasets,
        'dataset_bytes', dataset_bytes,
        'local_copies', local_copies,
        'bytes_to_copy', bytes_to_copy,
        'copy_weekly_cost', round(copy_weekly_cost, 2),
        'avoidable', round(greatest(saving, 0), 2),
        'reader_teams', reader_teams,
        'reader_jobs', reader_jobs,
        'bucket_team', line_team,
        'files', files[1:10]
    ) as evidence,
    (case when status = 'waste' then round(saving, 6) else 0 end)::decimal(18, 6) as estimated_waste,
    currency,
    'the week''s inter-region transfer out of the bucket into the readers'' region, minus the week''s storage '
    || 'cost of a copy there (0 when one exists), each line counted for the share of its charge period inside '
    || 'the week' as waste_basis
from described
order by estimated_waste desc, resource_id
