-- STO001 orphaned-checkpoint
-- depends_on: storage_checkpoints (marts only)
-- params: $window_end, $keep_last, $failed_grace_hours, $unknown_run_idle_days
-- One finding per run. A run's bytes are claimed when it failed (its latest job ended FAILED, CANCELLED,
-- TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL, DEADLINE or PREEMPTED, at least failed_grace_hours before
-- the week's end, and nothing was written after), when no scheduler knows it and nothing was written for
-- unknown_run_idle_days, and, for COMPLETED runs, the steps older than the newest keep_last (the best
-- and milestone checkpoints kept). Priced: bytes x the bucket's price per GB-month x 7 / 30.44.
with checkpoints as (
    select
        *,
        size_bytes / 1073741824 * price_per_gb_month as monthly_cost
    from storage_checkpoints
    -- what existed during the week (a snapshot taken later may hold newer checkpoints)
    where first_modified < $window_end::timestamp
),

runs as (
    select
        store,
        bucket,
        run_prefix,
        any_value(run_id) as run_id,
        any_value(ckpt_project) as ckpt_project,
        any_value(run_state) as run_state,
        any_value(run_ended_at) as run_ended_at,
        any_value(run_jobs) as run_jobs,
        any_value(run_job_ids) as run_job_ids,
        any_value(job_id) as job_id,
        any_value(run_user) as run_user,
        any_value(run_team) as run_team,
        any_value(run_project) as run_project,
        any_value(jobs_known) as jobs_known,
        max(last_modified) as last_write,
        count(distinct step) as checkpoints,
        any_value(resource_id) as resource_id,
        any_value(region_id) filter (where region_id is not null) as region_id,
        any_value(provider) filter (where provider is not null) as provider,
        any_value(account_id) filter (where account_id is not null) as account_id,
        any_value(bucket_team) filter (where bucket_team is not null) as bucket_team,
        any_value(bucket_project) filter (where bucket_project is not null) as bucket_project,
        any_value(bucket_owner) filter (where bucket_owner is not null) as bucket_owner
    from checkpoints
    group by store, bucket, run_prefix
),

categorised as (
    select
        *,
        case
            when (job_failed(run_state) or run_state = 'PREEMPTED')
                and run_ended_at <= $window_end::timestamp - to_seconds(cast($failed_grace_hours * 3600 as bigint))
                and last_write <= run_ended_at + interval 1 hour
                then 'failed'
            when run_jobs = 0 and last_write <= $window_end::timestamp - to_days(cast($unknown_run_idle_days as integer))
                then 'unknown'
            when run_state = 'COMPLETED' then 'superseded'
        end as category
    from runs
),

claimed as (
    select
        c.*,
        r.category
    from checkpoints as c
    inner join categorised as r on r.store = c.store and r.bucket = c.bucket and r.run_prefix = c.run_prefix
    where r.category in ('failed', 'unknown')
        or (
            r.category = 'superseded'
            and c.step_rank > $keep_last and not c.is_best and not c.is_milestone
        )
),

by_class as (
    select
        store,
        bucket,
        run_prefix,
        storage_class,
        sum(size_bytes)::bigint as size_bytes,
        any_value(price_per_gb_month) as price_per_gb_month,
        any_value(price_source) as price_source
    from claimed
    group by store, bucket, run_prefix, storage_class
),

flagged as (
    select
        store,
        bucket,
        run_prefix,
        count(distinct step) as checkpoints_flagged,
        sum(objects)::bigint as objects,
        sum(size_bytes)::bigint as size_bytes,
        sum(monthly_cost) as monthly_cost,
        coalesce(sum(size_bytes) filter (where price_per_gb_month is null), 0)::bigint as unpriced_bytes,
        arg_max(currency, size_bytes) filter (where currency is not null) as currency,
        list(distinct step order by step) filter (where step is not null) as steps,
        min(first_modified) as first_written
    from claimed
    group by store, bucket, run_prefix
),

classes as (
    select
        store,
        bucket,
        run_prefix,
        list(
            {'storage_class': storage_class, 'bytes': size_bytes,
             'price_per_gb_month': round(price_per_gb_month, 6), 'price_source': price_source}
            order by storage_class
        ) as by_storage_class,
        string_agg(distinct price_source, '; ' order by price_source) as price_sources
    from by_class
    group by store, bucket, run_prefix
),

combined as (
    select
        r.*,
        f.checkpoints_flagged,
        f.objects,
        f.size_bytes,
        f.monthly_cost,
        f.unpriced_bytes,
        f.currency,
        f.steps,
        f.first_written,
        k.by_storage_class,
        k.price_sources,
        f.size_bytes / 1073741824 as gib,
        f.monthly_cost * 7 / days_per_month() as weekly_cost,
        case
            when r.category = 'unknown' and not r.jobs_known then 'insufficient_data'
            when f.monthly_cost is null or f.monthly_cost <= 0 then 'insufficient_data'
            else 'waste'
        end as status,
        coalesce(r.run_id, r.run_prefix) as run_label,
        coalesce(' (' || r.ckpt_project || ')', '') as project_label
    from categorised as r
    inner join flagged as f on f.store = r.store and f.bucket = r.bucket and f.run_prefix = r.run_prefix
    inner join classes as k on k.store = r.store and k.bucket = r.bucket and k.run_prefix = r.run_prefix
)

select
    run_prefix as resource_id,
    'checkpoint run' as resource_type,
    provider,
    account_id,
    region_id,
    coalesce(run_team, bucket_team) as team,
    coalesce(ckpt_project, run_project, bucket_project) as project,
    coalesce(run_user, bucket_owner) as owner,
    job_id,
    status,
    case
        when status = 'insufficient_data' and category = 'unknown' and not jobs_known then printf(
            'Run %s%s (%.1f GiB of checkpoints in %s, untouched since %s) is known to no scheduler, but '
            || 'the warehouse has no scheduler jobs at all: cannot tell whether it is orphaned.',
            run_label, project_label, gib, bucket, strftime(last_write, '%Y-%m-%d')
        )
        when status = 'insufficient_data' then printf(
            'Run %s%s has %.1f GiB of %s checkpoints in %s, but neither the bill nor prices.storage_gb_month '
            || 'gives a price for them.',
            run_label, project_label, gib, category, bucket
        )
        when category = 'failed' then printf(
            'Run %s%s %s on %s and was never resumed; its %d checkpoint(s), %.1f GiB in %s, cost %s %.2f a week '
            || '(%s %.2f a month).',
            run_label, project_label, run_state, strftime(run_ended_at, '%Y-%m-%d'), checkpoints_flagged, gib,
            bucket, currency, weekly_cost, currency, monthly_cost
        )
        when category = 'unknown' then printf(
            'Run %s%s is known to no scheduler and untouched since %s (%d days); its %d checkpoint(s), %.1f GiB '
            || 'in %s, cost %s %.2f a week (%s %.2f a month).',
            run_label, project_label, strftime(last_write, '%Y-%m-%d'),
            datediff('day', last_write, $window_end::timestamp), checkpoints_flagged, gib, bucket, currency,
            weekly_cost, currency, monthly_cost
        )
        else printf(
            'Run %s%s COMPLETED on %s; %d of its %d checkpoints are superseded (older than the newest %d, best '
            || 'and milestones kept): %.1f GiB in %s costing %s %.2f a week (%s %.2f a month).',
            run_label, project_label, coalesce(strftime(run_ended_at, '%Y-%m-%d'), '?'), checkpoints_flagged,
            checkpoints, $keep_last, gib, bucket, currency, weekly_cost, currency, monthly_cost
        )
    end as reason,
    json_object(
        'category', category,
        'run_id', run_id,
        'project', ckpt_project,
        'run_prefix', run_prefix,
        'run_state', run_state,
        'job_id', job_id,
        'job_ids', run_job_ids,
        'run_ended_at', strftime(run_ended_at, '%Y-%m-%dT%H:%M:%SZ'),
        'last_write', strftime(last_write, '%Y-%m-%dT%H:%M:%SZ'),
        'checkpoints', checkpoints,
        'checkpoints_flagged', checkpoints_flagged,
        'steps_flagged', steps[1:20],
        'objects', objects,
        'bytes', size_bytes,
        'gib', round(gib, 3),
        'unpriced_bytes', unpriced_bytes,
        'by_storage_class', by_storage_class,
        'price_source', price_sources,
        'weekly_cost', round(weekly_cost, 2),
        'monthly_cost', round(monthly_cost, 2),
        'as_of', strftime($window_end::timestamp, '%Y-%m-%dT%H:%M:%SZ')
    ) as evidence,
    (case when status = 'waste' then round(weekly_cost, 6) else 0 end)::decimal(18, 6) as estimated_waste,
    currency,
    'checkpoint bytes flagged x the bucket''s price per GB-month (GB = 2^30 bytes) x 7 / 30.44 days; '
    || 'the monthly run-rate is in the evidence' as waste_basis
from combined
order by estimated_waste desc, resource_id
