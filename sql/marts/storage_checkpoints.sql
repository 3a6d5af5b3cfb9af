-- grain: one row per checkpoint (run x step) x storage class; a run's files outside any step form step NULL
-- depends_on: storage_objects_current, storage_prices, int_jobs
-- Checkpoint files (paths under a `checkpoints:` pattern) grouped into checkpoints, with their run's lineage:
-- the run's jobs (int_jobs matched on run_id, job name or job id; the latest job gives the run's state and
-- end), the step's rank in its run (1 = newest), whether it is the run's best ({loss}/{score} in the
-- pattern) or a milestone (a path token best, final, milestone, keep or release), and the bucket's price.
-- step_rank: the step's rank in its run, 1 = newest
-- is_best: the run's best step by its {loss} (lowest) or {score} (highest)
-- is_milestone: a path token says best, final, milestone, keep or release
-- run_state: state of the run's latest job
-- jobs_known: whether the warehouse holds any scheduler jobs (else run_* job columns cannot be known)
with files as (
    select *
    from storage_objects_current
    where role = 'checkpoint'
),

by_class as (
    select
        store,
        bucket,
        run_prefix,
        step,
        storage_class,
        any_value(resource_id) as resource_id,
        any_value(region_id) filter (where region_id is not null) as region_id,
        count(*) as objects,
        sum(size_bytes)::bigint as size_bytes,
        min(last_modified) as first_modified,
        max(last_modified) as last_modified
    from files
    group by store, bucket, run_prefix, step, storage_class
),

by_step as (
    select
        store,
        bucket,
        run_prefix,
        step,
        any_value(ckpt_project) as ckpt_project,
        any_value(run_id) as run_id,
        min(metric) as metric_min,
        max(metric) as metric_max,
        any_value(metric_name) as metric_name,
        max(last_modified) as step_written,
        bool_or(regexp_matches(lower(key), '(^|[/_.-])(best|final|milestone|keep|release)([/_.-]|$)'))
            as is_milestone
    from files
    group by store, bucket, run_prefix, step
),

runs as (
    select
        store,
        bucket,
        run_prefix,
        any_value(ckpt_project) as ckpt_project,
        any_value(run_id) as run_id,
        count(step) as steps,
        max(step) as last_step,
        min(step_written) as first_write,
        max(step_written) as last_write,
        case any_value(metric_name)
            when 'loss' then arg_min(step, metric_min) filter (where step is not null and metric_min is not null)
            when 'score' then arg_max(step, metric_max) filter (where step is not null and metric_max is not null)
        end as best_step
    from by_step
    group by store, bucket, run_prefix
),

ranked as (
    select
        *,
        case when step is not null
            then dense_rank() over (partition by store, bucket, run_prefix order by step desc nulls last)
        end as step_rank
    from by_step
),

job_links as (
    -- a run's jobs: the scheduler's run_id, its job name or its job id equal the path's run id
    select r.store, r.bucket, r.run_prefix, j.job_key, j.job_id, j.state, j.submitted_at, j.started_at,
        j.ended_at, j.user, j.team, j.project
    from runs as r
    inner join int_jobs as j on j.run_id = r.run_id
    union
    select r.store, r.bucket, r.run_prefix, j.job_key, j.job_id, j.state, j.submitted_at, j.started_at,
        j.ended_at, j.user, j.team, j.project
    from runs as r
    inner join int_jobs as j on j.job_name = r.run_id
    union
    select r.store, r.bucket, r.run_prefix, j.job_key, j.job_id, j.state, j.submitted_at, j.started_at,
        j.ended_at, j.user, j.team, j.project
    from runs as r
    inner join int_jobs as j on j.job_id = r.run_id
),

run_jobs as (
    select
        store,
        bucket,
        run_prefix,
        count(distinct job_key) as jobs,
        list(distinct job_id order by job_id) as job_ids,
        arg_max(
            {'job_id': job_id, 'state': state, 'started_at': started_at, 'ended_at': ended_at,
             'user': user, 'team': team, 'project': project},
            coalesce(started_at, submitted_at, ended_at)
        ) as latest
    from job_links
    group by store, bucket, run_prefix
),

scheduler as (
    select count(*) > 0 as jobs_known
    from int_jobs
)

select
    c.store,
    c.bucket,
    c.resource_id,
    coalesce(c.region_id, p.region_id) as region_id,
    p.provider,
    p.account_id,
    c.run_prefix,
    s.ckpt_project,
    s.run_id,
    c.step,
    c.storage_class,
    c.objects,
    c.size_bytes,
    c.first_modified,
    c.last_modified,
    s.step_written,
    s.step_rank,
    r.steps as run_steps,
    r.last_step as run_last_step,
    s.metric_name,
    case s.metric_name when 'loss' then s.metric_min when 'score' then s.metric_max end as metric,
    coalesce(s.step = r.best_step, false) as is_best,
    s.is_milestone,
    r.first_write as run_first_write,
    r.last_write as run_last_write,
    coalesce(j.jobs, 0) as run_jobs,
    j.job_ids as run_job_ids,
    j.latest.job_id as job_id,
    j.latest.state as run_state,
    j.latest.started_at as run_started_at,
    j.latest.ended_at as run_ended_at,
    j.latest.user as run_user,
    j.latest.team as run_team,
    j.latest.project as run_project,
    sc.jobs_known,
    p.team as bucket_team,
    p.project as bucket_project,
    p.owner as bucket_owner,
    p.price_per_gb_month,
    p.currency,
    p.price_source,
    p.price_detail
from by_class as c
inner join ranked as s
    on s.store = c.store and s.bucket = c.bucket and s.run_prefix = c.run_prefix
    and s.step is not distinct from c.step
inner join runs as r on r.store = c.store and r.bucket = c.bucket and r.run_prefix = c.run_prefix
left join run_jobs as j on j.store = c.store and j.bucket = c.bucket and j.run_prefix = c.run_prefix
left join storage_prices as p
    on p.store = c.store and p.bucket = c.bucket and p.storage_class is not distinct from c.storage_class
cross join scheduler as sc
