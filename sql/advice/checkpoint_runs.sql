-- grain: one row per scheduler job on a billed GPU instance that ran in the lookback
-- depends_on: jobs_enriched, resources, storage_checkpoints, job_checkpoint_writes, int_train_intervals
-- params: $lookback_start, $window_end
-- What checkpoint cadence advice (ADV003) measures per run, grouped like ADV002's spot advice (job type,
-- provider, region, instance family; a host without a bill: its pricing basis and GPU model): the checkpoints
-- the run wrote while it ran (job_checkpoint_writes: the lineage STO001 and GPU004 read; else the saves its
-- training log reports) and the checkpoint bytes the job type keeps stored with their monthly cost. The write
-- time δ is sql/advice/checkpoint_write_time.sql's, the failure rate sql/advice/job_failures.sql's.
-- ckpt_from: objects | log: where the run's checkpoint times come from (NULL: none)
-- ckpts: checkpoints written while the run ran; ckpt_span_h: hours from the run's start to its last (a run
-- starts from a checkpoint, so each checkpoint ends one interval)
-- gpus: the GPUs the job record requested, else its GPU-hours over its runtime
-- type_stored_bytes, type_stored_monthly_cost: the job type's checkpoints stored now (each step and storage
-- class once, however many runs name it), priced per GB-month (2^30 bytes)
with jobs as (
    select
        j.job_key,
        j.job_id,
        job_type(coalesce(j.job_name, j.run_id)) as job_type,
        j.team,
        j.project,
        j.state,
        j.started_at,
        j.ended_at,
        greatest(epoch(j.ended_at) - epoch(j.started_at), 0) / 3600 as runtime_h,
        j.gpu_hours,
        coalesce(
            j.gpus_requested, j.gpu_hours / nullif((epoch(j.ended_at) - epoch(j.started_at)) / 3600, 0)
        ) as gpus,
        j.cost::double as cost,
        j.currency,
        coalesce(r.provider, r.pricing_basis) as provider,
        r.region_id,
        coalesce(split_part(r.instance_type, '.', 1), r.gpu_model) as instance_family
    from jobs_enriched as j
    inner join resources as r on r.resource_id = j.resource_ids[1]
    where j.started_at < $window_end::timestamp
        and j.ended_at > $lookback_start::timestamp
        and j.ended_at > j.started_at
        and j.job_name is not null
        and j.gpu_hours > 0
),

objects as (
    select w.job_key, w.written as ts
    from job_checkpoint_writes as w
    semi join jobs as j on j.job_key = w.job_key
),

log_saves as (
    select
        i.job_key,
        i.ts
    from int_train_intervals as i
    inner join jobs as j on j.job_key = i.job_key
    where i.event = 'checkpoint' and i.ts >= j.started_at and i.ts <= j.ended_at
),

object_times as (
    select job_key, count(*) as n, max(ts) as last_ts from objects group by job_key
),

log_times as (
    select job_key, count(*) as n, max(ts) as last_ts from log_saves group by job_key
),

stored as (
    select distinct
        job_type(coalesce(j.job_name, j.run_id)) as job_type,
        c.bucket,
        c.run_prefix,
        c.step,
        c.storage_class,
        c.size_bytes,
        c.price_per_gb_month
    from storage_checkpoints as c
    inner join jobs_enriched as j on list_contains(c.run_job_ids, j.job_id)
    where j.job_key in (select job_key from jobs)
),

type_stored as (
    select
        job_type,
        sum(size_bytes) as stored_bytes,
        sum(size_bytes / 1073741824 * price_per_gb_month)::double as stored_monthly_cost
    from stored
    group by job_type
)

select
    j.*,
    case when coalesce(o.n, 0) > 0 then 'objects' when coalesce(l.n, 0) > 0 then 'log' end as ckpt_from,
    coalesce(o.n, l.n, 0) as ckpts,
    coalesce(
        (epoch(o.last_ts) - epoch(j.started_at)) / 3600, (epoch(l.last_ts) - epoch(j.started_at)) / 3600
    ) as ckpt_span_h,
    coalesce(t.stored_bytes, 0) as type_stored_bytes,
    coalesce(t.stored_monthly_cost, 0) as type_stored_monthly_cost
from jobs as j
left join object_times as o on o.job_key = j.job_key
left join log_times as l on l.job_key = j.job_key
left join type_stored as t on t.job_type = j.job_type
order by j.job_type, j.started_at, j.job_key
