-- grain: one row per job type whose runs wrote a checkpoint or logged a save in the bounds
-- depends_on: jobs_enriched, job_checkpoint_writes, int_train_intervals, int_job_hosts, gpu_samples
-- params: $since, $until (NULL: no bound), $dip_window_s, $dip_util_pct (NULL: 600 s and 20 %)
-- The measured checkpoint write time δ, one measurement for checkpoint cadence advice (ADV003) and
-- `wastewatch estimate` (a planned job like a job type): the median of the train logs' save durations (their
-- lines with event = 'checkpoint' and save_s, matched to the type's runs), else the median over the
-- checkpoint objects the runs wrote while running of the utilisation dip around each write: the seconds the
-- run's GPUs spent below $dip_util_pct % within $dip_window_s seconds of it (samples below x the GPU's
-- sampling period, mean over GPUs). A dip of 0 everywhere (asynchronous saves, samples too sparse) is no
-- measurement.
-- log_saves: saves with a duration; log_save_s: their median seconds
-- dip_writes: checkpoint writes with telemetry around them; dip_s: the median dip over them
-- write_s: log_save_s, else dip_s when above 0; write_from: log | dip (NULL: not measured)
with jobs as (
    select
        j.job_key,
        j.job_id,
        job_type(coalesce(j.job_name, j.run_id)) as job_type,
        j.started_at,
        j.ended_at
    from jobs_enriched as j
    where j.ended_at > j.started_at
        and j.job_name is not null
        and ($since::timestamp is null or j.ended_at > $since::timestamp)
        and ($until::timestamp is null or j.started_at < $until::timestamp)
),

log_saves as (
    select
        j.job_type,
        i.save_s
    from int_train_intervals as i
    inner join jobs as j on j.job_key = i.job_key
    where i.event = 'checkpoint' and i.save_s is not null and i.ts >= j.started_at and i.ts <= j.ended_at
),

objects as (
    select w.job_key, j.job_type, w.written as ts
    from job_checkpoint_writes as w
    inner join jobs as j on j.job_key = w.job_key
),

samples as (
    -- the run's GPUs' samples within the window around each checkpoint object's write
    select
        o.job_type,
        o.job_key,
        o.ts as written,
        s.host,
        coalesce(s.gpu_uuid, s.gpu_index::varchar) as gpu,
        s.ts,
        s.util_pct
    from objects as o
    inner join int_job_hosts as h on h.job_key = o.job_key
    inner join gpu_samples as s
        on lower(split_part(trim(s.host), '.', 1)) = h.host_key
        and s.ts between o.ts - to_seconds(coalesce($dip_window_s, 600))
        and o.ts + to_seconds(coalesce($dip_window_s, 600))
    where s.util_pct is not null
),

per_gpu as (
    select
        job_type,
        job_key,
        written,
        count(*) filter (where util_pct < coalesce($dip_util_pct, 20))
        * (epoch(max(ts)) - epoch(min(ts))) / nullif(count(*) - 1, 0) as low_s
    from samples
    group by job_type, job_key, written, host, gpu
),

dips as (
    select job_type, count(*) as writes, median(dip_s) as dip_s
    from (
        select job_type, job_key, written, avg(low_s) as dip_s
        from per_gpu
        where low_s is not null
        group by job_type, job_key, written
    )
    group by job_type
),

logged as (
    select job_type, count(*) as saves, median(save_s) as save_s from log_saves group by job_type
),

types as (
    select job_type from logged
    union
    select job_type from objects
)

select
    t.job_type,
    coalesce(l.saves, 0) as log_saves,
    l.save_s as log_save_s,
    coalesce(d.writes, 0) as dip_writes,
    d.dip_s,
    coalesce(l.save_s, case when d.dip_s > 0 then d.dip_s end) as write_s,
    case when l.save_s is not null then 'log' when d.dip_s > 0 then 'dip' end as write_from
from types as t
left join logged as l on l.job_type = t.job_type
left join dips as d on d.job_type = t.job_type
order by t.job_type
