-- STO005 log-retention
-- depends_on: log_groups_current, log_storage_lines, storage_objects_current, storage_prices (marts only)
-- params: $window_start, $window_end, $retention_days, $min_waste, $log_patterns, $metric_block_patterns
-- Four kinds of finding. (1) A listed log group that never expires, or keeps its events longer than
-- retention_days: the listing gives its stored bytes, not their age, so the bytes a retention of retention_days
-- would keep are retention_days x its daily ingestion (the bill's ingested bytes; else the growth of its stored
-- bytes between listings; else, for a group with a retention of R days, stored / R; else stored / its age), and
-- waste = the week's storage cost of the group x the share of its stored bytes beyond that. (2) A provider
-- retention line (Azure Log Analytics, Google Cloud Logging) bills only bytes older than the days it includes;
-- when those are at least retention_days, every such byte is past the retention and the whole line is waste;
-- AWS storage lines of groups no listing has, and managed metric-storage lines (Amazon Managed Service for
-- Prometheus), which bill every stored byte whatever its age, are `suspect` at 0. (3) Training-log, event and
-- profiler-trace files (log_patterns) in object stores, older than retention_days and under no checkpoint or
-- dataset pattern, priced like the other storage rules (bytes / 2^30 x price per GB-month x 7 / 30.44), one
-- finding per bucket. (4) Prometheus TSDB blocks in object stores (Thanos, Mimir, Cortex: a folder named by a
-- ULID holding chunks/, index and meta.json, metric_block_patterns) whose files were all last written more than
-- retention_days ago: a block is immutable and written after its newest sample, so every sample in it is older
-- than that; priced the same way, one finding per bucket and prefix (a Mimir tenant).
-- Each bill line counts for the share of its charge period inside the week.
with in_window as (
    select
        *,
        epoch(least(charge_period_end, $window_end::timestamp) - greatest(charge_period_start, $window_start::timestamp))
            / epoch(charge_period_end - charge_period_start) as share,
        greatest(charge_period_start, $window_start::timestamp) as part_start,
        least(charge_period_end, $window_end::timestamp) as part_end
    from log_storage_lines
    where charge_period_start < $window_end::timestamp
        and charge_period_end > $window_start::timestamp
        and charge_period_end > charge_period_start
),

group_storage as (
    select
        log_group_arn,
        currency,
        sum(effective_cost * share) as storage_cost,
        sum(quantity * share) as gb_months,
        list(distinct usage_type order by usage_type) as usage_types,
        mode(team) as team,
        mode(project) as project,
        mode(owner) as owner,
        count(*) as lines,
        list(distinct x_source_file order by x_source_file) as files
    from in_window
    where kind = 'storage' and log_group_arn is not null
    group by log_group_arn, currency
),

group_ingestion as (
    -- GB ingested inside the week over the days the lines cover there (GB = 2^30 bytes)
    select
        log_group_arn,
        sum(quantity * share) as ingested_gb,
        epoch(max(part_end) - min(part_start)) / 86400 as days_covered
    from in_window
    where kind = 'ingestion' and log_group_arn is not null
    group by log_group_arn
),

groups as (
    select
        g.*,
        s.currency,
        s.storage_cost,
        s.gb_months,
        s.usage_types,
        s.team,
        s.project,
        s.owner,
        s.lines,
        s.files,
        i.ingested_gb,
        i.days_covered,
        case
            when i.days_covered > 0 then 'bill'
            when g.retention_in_days is null and g.growth_bytes_per_day >= 0 then 'growth'
            when g.retention_in_days is not null and g.age_days >= g.retention_in_days then 'retention'
            when g.retention_in_days is null and g.age_days >= 1 then 'lifetime'
        end as ingestion_basis
    from log_groups_current as g
    left join group_storage as s on s.log_group_arn = g.log_group_arn
    left join group_ingestion as i on i.log_group_arn = g.log_group_arn
    where g.retention_in_days is null or g.retention_in_days > $retention_days
),

measured as (
    select
        *,
        case ingestion_basis
            when 'bill' then ingested_gb * 1073741824 / days_covered
            when 'growth' then growth_bytes_per_day
            when 'retention' then stored_bytes / retention_in_days
            when 'lifetime' then stored_bytes / age_days
        end as daily_bytes
    from groups
),

judged_groups as (
    select
        *,
        least(stored_bytes, $retention_days * daily_bytes) as kept_bytes,
        greatest(stored_bytes - $retention_days * daily_bytes, 0) as excess_bytes,
        storage_cost * greatest(stored_bytes - $retention_days * daily_bytes, 0) / nullif(stored_bytes, 0) as waste,
        case
            when stored_bytes is null or daily_bytes is null then 'insufficient_data'
            when stored_bytes - $retention_days * daily_bytes <= 0 then null
            when storage_cost is null then 'insufficient_data'
            when storage_cost * (stored_bytes - $retention_days * daily_bytes) / stored_bytes >= $min_waste
                then 'waste'
        end as status
    from measured
),

group_findings as (
    select
        coalesce(log_group_arn, log_group) as resource_id,
        'log group' as resource_type,
        provider,
        account_id,
        region_id,
        team,
        project,
        owner,
        null::varchar as job_id,
        status,
        case
            when status = 'waste' then printf(
                'Log group %s keeps its events %s and stores %.1f GiB; at %.2f GiB a day (%s), a %d-day retention '
                || 'would keep %.1f GiB, so %.0f%% of its storage (%s %.2f of %s %.2f this week) is past the retention.',
                log_group,
                case when retention_in_days is null then 'forever (no retention set)'
                     else printf('for %d days', retention_in_days) end,
                stored_bytes / 1073741824, daily_bytes / 1073741824,
                case ingestion_basis
                    when 'bill' then 'ingested, from the bill'
                    when 'growth' then 'growth of its stored bytes'
                    when 'retention' then printf('stored bytes over its %d-day retention', retention_in_days)
                    else 'stored bytes over its age'
                end,
                $retention_days, kept_bytes / 1073741824, 100 * excess_bytes / stored_bytes, currency, waste,
                currency, storage_cost
            )
            when storage_cost is null and daily_bytes is not null then printf(
                'Log group %s keeps its events %s and about %.1f GiB of its %.1f GiB are past a %d-day retention, '
                || 'but no storage line in the bill names it, so their cost is unknown.',
                log_group,
                case when retention_in_days is null then 'forever (no retention set)'
                     else printf('for %d days', retention_in_days) end,
                excess_bytes / 1073741824, stored_bytes / 1073741824, $retention_days
            )
            else printf(
                'Log group %s keeps its events %s, but neither the bill, earlier listings nor its age say how much '
                || 'it ingests a day (or its stored bytes are not listed), so the bytes past a %d-day retention are unknown.',
                log_group,
                case when retention_in_days is null then 'forever (no retention set)'
                     else printf('for %d days', retention_in_days) end,
                $retention_days
            )
        end as reason,
        json_object(
            'log_group', log_group,
            'log_group_arn', log_group_arn,
            'retention_in_days', retention_in_days,
            'log_group_class', log_group_class,
            'stored_bytes', stored_bytes,
            'listed_at', strftime(listed_at, '%Y-%m-%dT%H:%M:%SZ'),
            'created_at', strftime(created_at, '%Y-%m-%dT%H:%M:%SZ'),
            'ingestion_basis', ingestion_basis,
            'daily_ingested_bytes', round(daily_bytes, 0),
            'ingested_gb_in_week', round(ingested_gb, 3),
            'prev_listed_at', strftime(prev_listed_at, '%Y-%m-%dT%H:%M:%SZ'),
            'prev_stored_bytes', prev_stored_bytes,
            'retention_days', $retention_days,
            'kept_bytes', round(kept_bytes, 0),
            'excess_bytes', round(excess_bytes, 0),
            'excess_share', round(excess_bytes / nullif(stored_bytes, 0), 6),
            'storage_cost', round(storage_cost, 6),
            'gb_months', round(gb_months, 3),
            'usage_types', usage_types,
            'lines', lines,
            'files', files[1:10],
            'formula', 'storage cost x max(0, stored_bytes - retention_days x daily_ingested_bytes) / stored_bytes'
        ) as evidence,
        (case when status = 'waste' then round(waste, 6) else 0 end)::decimal(18, 6) as estimated_waste,
        currency,
        'the week''s storage cost of the log group x max(0, stored bytes - retention_days x bytes ingested a day) / '
        || 'stored bytes' as waste_basis
    from judged_groups
    where status is not null
),

bill_only as (
    -- retention and storage lines with no listed log group behind them
    select
        coalesce(log_group_arn, resource_id, provider || ' ' || usage_type) as resource_id,
        kind,
        any_value(provider) as provider,
        any_value(account_id) filter (where account_id is not null) as account_id,
        any_value(region_id) filter (where region_id is not null) as region_id,
        mode(team) as team,
        mode(project) as project,
        mode(owner) as owner,
        currency,
        min(included_days) as included_days,
        sum(effective_cost * share) as cost,
        sum(quantity * share) as gb_months,
        list(distinct usage_type order by usage_type) as usage_types,
        count(*) as lines,
        list(distinct x_source_file order by x_source_file) as files
    from in_window as w
    where kind in ('storage', 'retention', 'metric_storage')
        and not exists (select 1 from log_groups_current as g where g.log_group_arn = w.log_group_arn)
    group by 1, kind, currency
    having sum(effective_cost * share) >= $min_waste
),

bill_findings as (
    select
        resource_id,
        case kind when 'retention' then 'log retention' when 'metric_storage' then 'metric store' else 'log group' end
            as resource_type,
        provider,
        account_id,
        region_id,
        team,
        project,
        owner,
        null::varchar as job_id,
        case when kind = 'retention' and included_days >= $retention_days then 'waste' else 'suspect' end as status,
        case
            when kind = 'retention' and included_days >= $retention_days then printf(
                '%s paid %s %.2f this week to keep %.1f GB-months of logs past the %d days its provider includes, '
                || 'all older than a %d-day retention.',
                resource_id, currency, cost, gb_months, included_days, $retention_days
            )
            when kind = 'retention' then printf(
                '%s paid %s %.2f this week to keep logs past the %d days its provider includes; the bill cannot '
                || 'tell how much of it is older than %d days.',
                resource_id, currency, cost, included_days, $retention_days
            )
            when kind = 'metric_storage' then printf(
                '%s paid %s %.2f this week to store %.1f GB-months of metrics; a managed metric store bills every '
                || 'stored byte, new or old, so the bill cannot tell how much of it is older than %d days.',
                resource_id, currency, cost, gb_months, $retention_days
            )
            else printf(
                '%s paid %s %.2f this week for stored logs, but no log-group listing (cloudwatch_logs source) says '
                || 'its retention or stored bytes; list it to judge.',
                resource_id, currency, cost
            )
        end as reason,
        json_object(
            'kind', kind,
            'included_days', included_days,
            'retention_days', $retention_days,
            'cost', round(cost, 6),
            'gb_months', round(gb_months, 3),
            'usage_types', usage_types,
            'lines', lines,
            'files', files[1:10]
        ) as evidence,
        (case when kind = 'retention' and included_days >= $retention_days then round(cost, 6) else 0 end)
            ::decimal(18, 6) as estimated_waste,
        currency,
        case kind
            when 'retention'
                then 'the week''s log-retention charge, which bills only bytes older than the provider''s included '
                    || 'days (all past retention_days when those are at least retention_days)'
            when 'metric_storage' then 'not priced: a metric-storage line bills every stored byte, whatever its age'
            else 'not priced: no listing gives the group''s stored bytes'
        end as waste_basis
    from bill_only
),

unclaimed as not materialized (
    -- objects under no checkpoint pattern and no dataset root, each either a file of a Prometheus TSDB block (in a
    -- folder named by a ULID, 26 Crockford base-32 characters, and matching metric_block_patterns) or not
    select
        o.*,
        regexp_matches(o.key, '^(.*/)?[0-9A-HJKMNP-TV-Z]{26}/[^/]+(/[^/]+)?$')
            and len(list_filter($metric_block_patterns, lambda pat: lower(o.key) glob lower(pat))) > 0
            as is_block_file
    from storage_objects_current as o
    where o.role is null
),

log_files as (
    select
        o.*,
        p.price_per_gb_month,
        p.currency,
        p.price_source,
        p.provider,
        p.account_id,
        p.team,
        p.project,
        p.owner,
        o.size_bytes / 1073741824 * p.price_per_gb_month as monthly_cost,
        regexp_replace(o.key, '/[^/]*$', '/') as folder
    from unclaimed as o
    left join storage_prices as p
        on p.store = o.store and p.bucket = o.bucket and p.storage_class = o.storage_class
    where not o.is_block_file
        and o.last_modified <= $window_end::timestamp - to_days(cast($retention_days as integer))
        and len(list_filter($log_patterns, lambda pat: lower(o.key) glob lower(pat))) > 0
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
        count(*) as objects,
        sum(size_bytes)::bigint as size_bytes,
        min(last_modified) as oldest,
        max(last_modified) as newest,
        sum(monthly_cost) as monthly_cost,
        bool_or(price_per_gb_month is null) as has_unpriced,
        arg_max(currency, size_bytes) filter (where currency is not null) as currency,
        string_agg(distinct price_source, '; ' order by price_source) as price_source
    from log_files
    group by store, bucket
),

folders as (
    select
        store,
        bucket,
        list({'folder': folder, 'objects': objects, 'bytes': bytes} order by bytes desc, folder) as top
    from (
        select store, bucket, folder, count(*) as objects, sum(size_bytes)::bigint as bytes
        from log_files
        group by store, bucket, folder
    )
    group by store, bucket
),

file_findings as (
    select
        case when b.store = 's3' then 's3://' || b.bucket || '/' else b.bucket || '/' end as resource_id,
        'training logs' as resource_type,
        b.provider,
        b.account_id,
        b.region_id,
        b.team,
        b.project,
        b.owner,
        null::varchar as job_id,
        case when b.has_unpriced then 'insufficient_data' else 'waste' end as status,
        case
            when b.has_unpriced then printf(
                '%d training-log, event or trace file(s) in %s, %.1f GiB, were last written more than %d days ago, '
                || 'but neither the bill nor prices.storage_gb_month prices their storage class.',
                b.objects, b.bucket, b.size_bytes / 1073741824, $retention_days
            )
            else printf(
                '%d training-log, event or trace file(s) in %s, %.1f GiB, were last written more than %d days ago '
                || '(the oldest on %s); they cost %s %.2f a week (%s %.2f a month).',
                b.objects, b.bucket, b.size_bytes / 1073741824, $retention_days, strftime(b.oldest, '%Y-%m-%d'),
                b.currency, b.monthly_cost * 7 / days_per_month(), b.currency, b.monthly_cost
            )
        end as reason,
        json_object(
            'objects', b.objects,
            'bytes', b.size_bytes,
            'gib', round(b.size_bytes / 1073741824, 3),
            'oldest_write', strftime(b.oldest, '%Y-%m-%dT%H:%M:%SZ'),
            'newest_write', strftime(b.newest, '%Y-%m-%dT%H:%M:%SZ'),
            'folders', f.top[1:10],
            'patterns', $log_patterns,
            'retention_days', $retention_days,
            'price_source', b.price_source,
            'weekly_cost', round(b.monthly_cost * 7 / days_per_month(), 2),
            'monthly_cost', round(b.monthly_cost, 2),
            'as_of', strftime($window_end::timestamp, '%Y-%m-%dT%H:%M:%SZ')
        ) as evidence,
        (case when b.has_unpriced then 0 else round(b.monthly_cost * 7 / days_per_month(), 6) end)
            ::decimal(18, 6) as estimated_waste,
        b.currency,
        'bytes of the log, event and trace files older than retention_days x the bucket''s price per GB-month '
        || '(GB = 2^30 bytes) x 7 / 30.44 days; the monthly run-rate is in the evidence' as waste_basis
    from buckets as b
    left join folders as f on f.store = b.store and f.bucket = b.bucket
    where b.has_unpriced or b.monthly_cost * 7 / days_per_month() >= $min_waste
),
block_files as (
    select
        o.store,
        o.bucket,
        o.region_id,
        o.size_bytes,
        o.last_modified,
        regexp_extract(o.key, '^(.*/)?([0-9A-HJKMNP-TV-Z]{26})/', 1) as prefix,
        regexp_extract(o.key, '^(.*/)?([0-9A-HJKMNP-TV-Z]{26})/', 2) as block_id,
        p.price_per_gb_month,
        p.currency,
        p.price_source,
        p.provider,
        p.account_id,
        p.team,
        p.project,
        p.owner,
        o.size_bytes / 1073741824 * p.price_per_gb_month as monthly_cost
    from unclaimed as o
    left join storage_prices as p
        on p.store = o.store and p.bucket = o.bucket and p.storage_class = o.storage_class
    where o.is_block_file
),

metric_blocks as (
    -- one row per block: its last write (a block is immutable; a marker written later makes it recent) and the
    -- time its ULID carries (the first 10 characters: milliseconds since the Unix epoch, when it was made)
    select
        store,
        bucket,
        prefix,
        block_id,
        epoch_ms(list_reduce(
            list_transform(range(1, 11), lambda i: position(substr(block_id, i, 1) in '0123456789ABCDEFGHJKMNPQRSTVWXYZ') - 1),
            lambda acc, d: acc * 32 + d
        )::bigint) as made_at,
        max(last_modified) as last_write,
        count(*) as objects,
        sum(size_bytes)::bigint as size_bytes,
        sum(monthly_cost) as monthly_cost,
        bool_or(price_per_gb_month is null) as has_unpriced,
        any_value(region_id) filter (where region_id is not null) as region_id,
        any_value(provider) filter (where provider is not null) as provider,
        any_value(account_id) filter (where account_id is not null) as account_id,
        any_value(team) filter (where team is not null) as team,
        any_value(project) filter (where project is not null) as project,
        any_value(owner) filter (where owner is not null) as owner,
        arg_max(currency, size_bytes) filter (where currency is not null) as currency,
        string_agg(distinct price_source, '; ' order by price_source) as price_source
    from block_files
    group by store, bucket, prefix, block_id
),

block_stores as (
    -- per bucket and prefix: the blocks last written more than retention_days ago, and how many newer ones stay
    select
        store,
        bucket,
        prefix,
        count(*) filter (where old) as blocks,
        count(*) filter (where not old) as newer_blocks,
        sum(objects) filter (where old) as objects,
        sum(size_bytes) filter (where old)::bigint as size_bytes,
        sum(monthly_cost) filter (where old) as monthly_cost,
        bool_or(has_unpriced) filter (where old) as has_unpriced,
        arg_min(block_id, (made_at, block_id)) filter (where old) as oldest_block,
        min(made_at) filter (where old) as oldest_made_at,
        min(last_write) filter (where old) as oldest_write,
        max(last_write) filter (where old) as newest_write,
        list({'block': block_id, 'made_at': strftime(made_at, '%Y-%m-%dT%H:%M:%SZ'), 'bytes': size_bytes}
            order by size_bytes desc, block_id) filter (where old) as top,
        any_value(region_id) filter (where region_id is not null) as region_id,
        any_value(provider) filter (where provider is not null) as provider,
        any_value(account_id) filter (where account_id is not null) as account_id,
        any_value(team) filter (where team is not null) as team,
        any_value(project) filter (where project is not null) as project,
        any_value(owner) filter (where owner is not null) as owner,
        arg_max(currency, size_bytes) filter (where old and currency is not null) as currency,
        string_agg(distinct price_source, '; ' order by price_source) filter (where old) as price_source
    from (
        select *, last_write <= $window_end::timestamp - to_days(cast($retention_days as integer)) as old
        from metric_blocks
    )
    group by store, bucket, prefix
    having count(*) filter (where old) > 0
),

block_findings as (
    select
        case when store = 's3' then 's3://' || bucket || '/' || prefix else bucket || '/' || prefix end
            as resource_id,
        'metric blocks' as resource_type,
        provider,
        account_id,
        region_id,
        team,
        project,
        owner,
        null::varchar as job_id,
        case when has_unpriced then 'insufficient_data' else 'waste' end as status,
        case
            when has_unpriced then printf(
                '%d Prometheus TSDB block(s) in %s, %.1f GiB, were last written more than %d days ago, but neither '
                || 'the bill nor prices.storage_gb_month prices their storage class.',
                blocks, bucket || '/' || prefix, size_bytes / 1073741824, $retention_days
            )
            else printf(
                '%d Prometheus TSDB block(s) in %s, %.1f GiB, were last written more than %d days ago, so every '
                || 'sample in them is older than that (the oldest block, %s, was made on %s); they cost %s %.2f a '
                || 'week (%s %.2f a month).',
                blocks, bucket || '/' || prefix, size_bytes / 1073741824, $retention_days, oldest_block,
                strftime(oldest_made_at, '%Y-%m-%d'), currency, monthly_cost * 7 / days_per_month(), currency,
                monthly_cost
            )
        end as reason,
        json_object(
            'prefix', prefix,
            'blocks', blocks,
            'newer_blocks', newer_blocks,
            'objects', objects,
            'bytes', size_bytes,
            'gib', round(size_bytes / 1073741824, 3),
            'oldest_block', oldest_block,
            'oldest_block_made_at', strftime(oldest_made_at, '%Y-%m-%dT%H:%M:%SZ'),
            'oldest_write', strftime(oldest_write, '%Y-%m-%dT%H:%M:%SZ'),
            'newest_write', strftime(newest_write, '%Y-%m-%dT%H:%M:%SZ'),
            'largest_blocks', top[1:10],
            'patterns', $metric_block_patterns,
            'retention_days', $retention_days,
            'price_source', price_source,
            'weekly_cost', round(monthly_cost * 7 / days_per_month(), 2),
            'monthly_cost', round(monthly_cost, 2),
            'as_of', strftime($window_end::timestamp, '%Y-%m-%dT%H:%M:%SZ')
        ) as evidence,
        (case when has_unpriced then 0 else round(monthly_cost * 7 / days_per_month(), 6) end)::decimal(18, 6)
            as estimated_waste,
        currency,
        'bytes of the TSDB blocks last written more than retention_days ago x the bucket''s price per GB-month '
        || '(GB = 2^30 bytes) x 7 / 30.44 days; the monthly run-rate is in the evidence' as waste_basis
    from block_stores
    where has_unpriced or monthly_cost * 7 / days_per_month() >= $min_waste
)

select * from group_findings
union all by name
select * from bill_findings
union all by name
select * from file_findings
union all by name
select * from block_findings
order by estimated_waste desc, resource_id
