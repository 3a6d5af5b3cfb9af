-- grain: one row per scheduler job with training-log lines (job_key)
-- depends_on: int_train_intervals, jobs_enriched, gpu_job_hours, resources, gpu_peak_flops
-- Measured model FLOPs utilisation of each job: MFU = 6 x N x tokens/s / (GPUs x dense peak FLOP/s of the GPU
-- model), N the parameter count its log gives, tokens/s over the wall-clock time between log lines (so input
-- stalls, checkpoint writes and waits count against it), the peak from gpu_peak_flops (dense, not sparse).
-- `mfu` is the median over the job's log intervals; the log's own step time gives `mfu_step_time`, which
-- leaves out whatever happened between steps. Throughput and cost per token come from the same tokens.
-- job_match: job_id | host_time: how the log's lines found the job (the most common way)
-- lines: log lines of the job; intervals: lines with a previous line of the job to time them from
-- params: the model's parameter count (the largest the log gives)
-- gpus: GPUs the run used: the log's count, else the job record's, else those whose telemetry names the job
-- gpus_from: log | job record | telemetry
-- gpu_model: the peak catalogue's name of the job's GPU (telemetry's model name, else the job's gpu_type,
-- else its billed resource's); NULL when the catalogue has no such GPU (no MFU then)
-- peak_dense_tflops: the catalogue's dense BF16 (FP16 where no BF16) TFLOP/s per GPU
-- tokens: tokens of every line of the job; timed_tokens: those of lines with an interval
-- logged_s: wall-clock seconds the intervals cover
-- mfu: median over the job's intervals of 6 x params x tokens / wall_s / (gpus x peak) (0-1)
-- mfu_mean: 6 x params x timed_tokens / logged_s / (gpus x peak): the intervals' time-weighted mean
-- mfu_step_time: median MFU with the log's own step time instead of the wall clock (stalls left out)
-- outside_step_share: share of logged_s outside the log's step times (input stalls, checkpoints, waits);
-- NULL when the log gives no step time
-- data_share: share of logged_s the log says it waited for input; NULL when it does not say
-- gpu_hours: the job's GPU-hours from telemetry (gpu_job_hours), else gpus x the logged time
-- tokens_per_gpu_hour: tokens / gpu_hours
-- cost: the job's GPU cost (gpu_job_hours' share of cost_hourly), in currency
-- cost_per_million_tokens: cost / tokens x 1,000,000, in currency
-- power_share: mean power over the job as a share of the power limit (telemetry)
with intervals as (
    -- the log's training lines: its checkpoint saves and configuration lines carry no tokens
    select *
    from int_train_intervals
    where event = 'step'
),

per_job as (
    select
        job_key,
        mode(job_match) as job_match,
        count(*) as lines,
        count(wall_s) as intervals,
        max(params) as params,
        max(gpus) as log_gpus,
        sum(tokens) as tokens,
        sum(tokens) filter (where wall_s is not null) as timed_tokens,
        sum(wall_s) as logged_s,
        sum(step_time_s) filter (where wall_s is not null) as step_time_s,
        sum(wall_s) filter (where wall_s is not null and step_time_s is not null) as step_timed_wall_s,
        sum(data_time_s) filter (where wall_s is not null) as data_time_s,
        sum(wall_s) filter (where wall_s is not null and data_time_s is not null) as data_timed_wall_s,
        min(ts) as first_line,
        max(ts) as last_line
    from intervals
    group by job_key
),

telemetry as (
    select
        job_key,
        count(distinct gpu_id) as gpus,
        mode(gpu_model) as gpu_model,
        sum(power_mean_w * samples) / nullif(sum(samples) filter (where power_mean_w is not null), 0)
            as power_mean_w,
        max(power_limit_w) as power_limit_w,
        sum(sm_active_mean * samples) / nullif(sum(samples) filter (where sm_active_mean is not null), 0)
            as sm_active_mean
    from gpu_job_hours
    where job_key in (select job_key from per_job)
    group by job_key
),

peak_names as (
    -- every model name and alias, normalised like a telemetry name ('NVIDIA H100 80GB HBM3' -> h100-80gb-hbm3)
    select
        gpu_model,
        peak_dense_tflops,
        regexp_replace(regexp_replace(lower(trim(alias)), '^(nvidia|tesla)[ _-]+', ''), '[ _]+', '-', 'g')
            as name
    from (select gpu_model, peak_dense_tflops, unnest(list_append(aliases, gpu_model)) as alias from gpu_peak_flops)
),

job_gpu as (
    select
        p.job_key,
        coalesce(p.log_gpus, j.gpus_requested, t.gpus) as gpus,
        case
            when p.log_gpus is not null then 'log'
            when j.gpus_requested is not null then 'job record'
            when t.gpus is not null then 'telemetry'
        end as gpus_from,
        regexp_replace(
            regexp_replace(lower(trim(coalesce(t.gpu_model, j.gpu_type, r.gpu_model))), '^(nvidia|tesla)[ _-]+', ''),
            '[ _]+', '-', 'g'
        ) as model_key
    from per_job as p
    inner join jobs_enriched as j on j.job_key = p.job_key
    left join telemetry as t on t.job_key = p.job_key
    left join resources as r on r.resource_id = j.resource_ids[1]
),

peaks as (
    select
        g.job_key,
        g.gpus,
        g.gpus_from,
        n.gpu_model,
        n.peak_dense_tflops
    from job_gpu as g
    left join peak_names as n on g.model_key = n.name or starts_with(g.model_key, n.name || '-')
    qualify row_number() over (partition by g.job_key order by length(n.name) desc nulls last) = 1
),

rates as (
    -- each interval's MFU over the wall clock and over the log's step time
    select
        i.job_key,
        6 * i.params * i.tokens / i.wall_s / (k.gpus * k.peak_dense_tflops * 1e12) as mfu,
        6 * i.params * i.tokens / i.step_time_s / (k.gpus * k.peak_dense_tflops * 1e12) as mfu_step_time
    from intervals as i
    inner join peaks as k on k.job_key = i.job_key
    where i.wall_s > 0 and i.tokens is not null and i.params > 0 and k.gpus > 0 and k.peak_dense_tflops > 0
),

medians as (
    select
        job_key,
        median(mfu) as mfu,
        median(mfu_step_time) filter (where mfu_step_time is not null) as mfu_step_time
    from rates
    group by job_key
)

select
    p.job_key,
    j.job_id,
    j.job_name,
    j.scheduler,
    j.team,
    j.project,
    j.user as owner,
    j.state,
    j.started_at,
    j.ended_at,
    p.job_match,
    p.first_line,
    p.last_line,
    p.lines,
    p.intervals,
    p.params,
    k.gpus,
    k.gpus_from,
    k.gpu_model,
    k.peak_dense_tflops,
    p.tokens,
    p.timed_tokens,
    p.logged_s,
    p.timed_tokens / nullif(p.logged_s, 0) as tokens_per_s,
    m.mfu,
    6 * p.params * p.timed_tokens / nullif(p.logged_s, 0) / nullif(k.gpus * k.peak_dense_tflops * 1e12, 0)
        as mfu_mean,
    m.mfu_step_time,
    -- NULL when the log gives no step time / input wait (greatest and least would skip the NULL)
    case when p.step_timed_wall_s > 0 then greatest(1 - p.step_time_s / p.step_timed_wall_s, 0) end
        as outside_step_share,
    case when p.data_timed_wall_s > 0 then least(p.data_time_s / p.data_timed_wall_s, 1) end as data_share,
    coalesce(j.gpu_hours, k.gpus * p.logged_s / 3600) as gpu_hours,
    p.tokens / nullif(coalesce(j.gpu_hours, k.gpus * p.logged_s / 3600), 0) as tokens_per_gpu_hour,
    j.cost,
    j.currency,
    (j.cost / nullif(p.tokens, 0) * 1000000)::decimal(18, 6) as cost_per_million_tokens,
    j.util_mean,
    t.power_mean_w,
    t.power_limit_w,
    t.power_mean_w / nullif(t.power_limit_w, 0) as power_share,
    t.sm_active_mean
from per_job as p
inner join jobs_enriched as j on j.job_key = p.job_key
left join peaks as k on k.job_key = p.job_key
left join medians as m on m.job_key = p.job_key
left join telemetry as t on t.job_key = p.job_key
