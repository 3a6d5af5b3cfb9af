-- STO003 cold-checkpoint-tiering
-- depends_on: storage_checkpoints, storage_prices (marts only)
-- params: $window_end, $min_age_days, $hot_classes, $target_class
-- One finding per run: checkpoints older than min_age_days (by their last write, at the week's end) still
-- in a hot storage class, among those STO001 can never claim whatever its thresholds: every checkpoint of
-- a running run, and the newest, best and milestone checkpoints (and files outside any step) of a
-- COMPLETED run. Failed, unknown and superseded checkpoints are STO001's (delete, not tier). Priced: bytes x
-- (the hot class's price - the target class's price for that bucket) per GB-month x 7 / 30.44.
with candidates as (
    select *
    from storage_checkpoints
    where store = 's3'
        and list_contains($hot_classes, storage_class)
        and last_modified <= $window_end::timestamp - to_days(cast($min_age_days as integer))
        and (
            run_state in ('RUNNING', 'PENDING', 'REQUEUED')
            or (
                run_state = 'COMPLETED'
                and (step is null or step_rank = 1 or is_best or is_milestone)
            )
        )
),

priced as (
    select
        c.*,
        t.price_per_gb_month as target_price,
        t.currency as target_currency,
        t.price_source as target_price_source,
        c.size_bytes / 1073741824 * (c.price_per_gb_month - t.price_per_gb_month) as monthly_saving
    from candidates as c
    left join storage_prices as t
        on t.store = c.store and t.bucket = c.bucket and t.storage_class = $target_class
),

runs as (
    select
        store,
        bucket,
        run_prefix,
        any_value(run_id) as run_id,
        any_value(ckpt_project) as ckpt_project,
        any_value(run_state) as run_state,
        any_value(job_id) as job_id,
        any_value(run_user) as run_user,
        any_value(run_team) as run_team,
        any_value(run_project) as run_project,
        any_value(region_id) filter (where region_id is not null) as region_id,
        any_value(provider) filter (where provider is not null) as provider,
        any_value(account_id) filter (where account_id is not null) as account_id,
        any_value(bucket_team) filter (where bucket_team is not null) as bucket_team,
        any_value(bucket_project) filter (where bucket_project is not null) as bucket_project,
        any_value(bucket_owner) filter (where bucket_owner is not null) as bucket_owner,
        count(distinct step) as checkpoints,
        list(distinct step order by step) filter (where step is not null) as steps,
        sum(objects)::bigint as objects,
        sum(size_bytes)::bigint as size_bytes,
        min(last_modified) as oldest_write,
        max(last_modified) as newest_write,
        sum(monthly_saving) filter (where monthly_saving > 0) as monthly_saving,
        sum(size_bytes) filter (where monthly_saving > 0)::bigint as saving_bytes,
        coalesce(sum(size_bytes) filter (where price_per_gb_month is null or target_price is null), 0)::bigint
            as unpriced_bytes,
        -- a flag, not `unpriced_bytes > 0`: DuckDB 2.0.1 mis-compares that sum in this query (returns false)
        bool_or(price_per_gb_month is null or target_price is null) as has_unpriced,
        arg_max(currency, size_bytes) filter (where currency is not null) as currency,
        list(distinct {'storage_class': storage_class, 'price_per_gb_month': round(price_per_gb_month, 6),
                       'price_source': price_source}) as hot_prices,
        any_value(target_price) as target_price,
        any_value(target_price_source) as target_price_source
    from priced
    group by store, bucket, run_prefix
),

combined as (
    select
        *,
        size_bytes / 1073741824 as gib,
        monthly_saving * 7 / 30.44 as weekly_saving,
        case
            when monthly_saving > 0 then 'waste'
            when has_unpriced then 'insufficient_data'
        end as status,
        coalesce(run_id, run_prefix) as run_label,
        coalesce(' (' || ckpt_project || ')', '') as project_label
    from runs
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
    case status
        when 'waste' then printf(
            'Run %s%s (%s) keeps %d checkpoint(s), %.1f GiB, in hot storage although the newest was written on '
            || '%s (over %d days ago); moving them to %s would save %s %.2f a week (%s %.2f a month).',
            run_label, project_label, run_state, checkpoints, gib, strftime(newest_write, '%Y-%m-%d'),
            $min_age_days, $target_class, currency, weekly_saving, currency, monthly_saving
        )
        else printf(
            'Run %s%s keeps %.1f GiB of checkpoints older than %d days in hot storage, but no price for %s (or '
            || 'for their class) is known from the bill or prices.storage_gb_month.',
            run_label, project_label, gib, $min_age_days, $target_class
        )
    end as reason,
    json_object(
        'run_id', run_id,
        'project', ckpt_project,
        'run_prefix', run_prefix,
        'run_state', run_state,
        'checkpoints', checkpoints,
        'steps', steps[1:20],
        'objects', objects,
        'bytes', size_bytes,
        'gib', round(gib, 3),
        'oldest_write', strftime(oldest_write, '%Y-%m-%dT%H:%M:%SZ'),
        'newest_write', strftime(newest_write, '%Y-%m-%dT%H:%M:%SZ'),
        'hot_prices', hot_prices,
        'target_class', $target_class,
        'target_price_per_gb_month', round(target_price, 6),
        'target_price_source', target_price_source,
        'unpriced_bytes', unpriced_bytes,
        'weekly_cost', round(weekly_saving, 2),
        'monthly_cost', round(monthly_saving, 2),
        'note', 'colder classes charge per-GB retrievals and a minimum storage duration (GLACIER_IR: 90 days)',
        'as_of', strftime($window_end::timestamp, '%Y-%m-%dT%H:%M:%SZ')
    ) as evidence,
    (case when status = 'waste' then round(weekly_saving, 6) else 0 end)::decimal(18, 6) as estimated_waste,
    currency,
    'checkpoint bytes x (hot class price - target class price) per GB-month (GB = 2^30 bytes) x 7 / 30.44 days; '
    || 'the monthly run-rate is in the evidence' as waste_basis
from combined
where status is not null
order by estimated_waste desc, resource_id
