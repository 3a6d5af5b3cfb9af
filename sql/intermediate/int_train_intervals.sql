-- grain: one row per training-log line x the job it belongs to (job_key, x_file_id, x_line)
-- depends_on: train_steps, int_jobs, int_job_hosts
-- Each line of a training log joined to its scheduler job: the job it names (its id, the latest record of
-- that id running at the line's time), else the job running on the line's host at its time (the latest
-- started when several were). The interval a line stands for runs from the previous line of the same job,
-- file and host: its wall-clock seconds include whatever the training waited for (input, checkpoints,
-- collectives), which the log's own step time may leave out. A job's first line has no interval. Checkpoint
-- saves and configuration lines (event) find their job the same way; they have no interval and are no
-- step's previous line.
-- event: step | checkpoint | config (train_steps.event; a warehouse's rows from before version 20 are steps)
-- job_match: job_id | host_time: how the line found its job
-- wall_s: wall-clock seconds since the previous line of the job (NULL for its first line)
-- step_time_s: the log's own time for the line's steps (step_s x steps), seconds
-- data_time_s: the log's time waiting for input for the line's steps, seconds, when it says
with lines as (
    select
        *,
        lower(split_part(trim(host), '.', 1)) as host_key,
        coalesce(event, 'step') as event_kind
    from train_steps
),

by_id as (
    select
        l.x_file_id,
        l.x_line,
        j.job_key
    from lines as l
    inner join int_jobs as j on j.job_id = l.job_id
    where l.job_id is not null
    qualify row_number() over (
        partition by l.x_file_id, l.x_line
        order by (j.started_at is null or j.started_at <= l.ts) desc, j.started_at desc nulls last, j.job_key
    ) = 1
),

by_host as (
    select
        l.x_file_id,
        l.x_line,
        h.job_key
    from lines as l
    inner join int_job_hosts as h
        on h.host_key = l.host_key and h.started_at <= l.ts and (h.ended_at is null or l.ts <= h.ended_at)
    where l.job_id is null and l.host_key is not null
    qualify row_number() over (partition by l.x_file_id, l.x_line order by h.started_at desc, h.job_key) = 1
),

matched as (
    select
        l.*,
        coalesce(i.job_key, h.job_key) as job_key,
        case when i.job_key is not null then 'job_id' when h.job_key is not null then 'host_time' end as job_match
    from lines as l
    left join by_id as i on i.x_file_id = l.x_file_id and i.x_line = l.x_line
    left join by_host as h on h.x_file_id = l.x_file_id and h.x_line = l.x_line
)

select
    job_key,
    job_match,
    ts,
    date_trunc('hour', ts) as hour,
    host,
    step,
    steps,
    tokens,
    tokens_from,
    params,
    gpus,
    case when event_kind = 'step' and ts > lag(ts) over run then epoch(ts) - epoch(lag(ts) over run) end as wall_s,
    step_s * coalesce(steps, 1) as step_time_s,
    data_s * coalesce(steps, 1) as data_time_s,
    loss,
    source,
    x_file_id,
    x_line,
    event_kind as event,
    save_s,
    checkpoint_path,
    model,
    global_batch,
    seq_len,
    parallel
from matched
where job_key is not null
window run as (partition by job_key, x_file_id, host, event_kind order by ts, x_line)
