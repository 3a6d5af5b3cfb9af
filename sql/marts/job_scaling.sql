-- grain: one row per scheduler job with training-log lines (job_key), as job_mfu has them
-- depends_on: job_mfu, int_train_intervals
-- Each job's model configuration and per-GPU throughput against the best smaller run of the same
-- configuration, the scaling efficiency GPU006 judges. The configuration is what the log's `config` lines
-- say (model, global batch, parallel layout) with the sequence length, the model's parameter count and the
-- GPU model; the layout leaves out the data-parallel degree, which is what changes with the GPU count.
-- Per-GPU throughput is the tokens per second of logged wall-clock time (job_mfu.tokens_per_s) over the
-- job's GPUs. The baseline is the run of the same configuration on fewer GPUs with the highest per-GPU
-- throughput, whenever it ran.
-- configured: the job's log has a configuration line naming its model, global batch or parallel layout
-- model: the model's name or shape the log gives (config line), NULL when it gives none
-- global_batch: samples per optimizer step over all GPUs (config line)
-- seq_len: the sequence length (the largest any line of the job gives)
-- layout: the parallel layout without its data-parallel degree (e.g. tp=8,pp=4,cp=1), NULL when not logged
-- params: the model's parameter count (job_mfu)
-- gpu_model: the GPU model (job_mfu); runs on different GPUs are different configurations
-- config_key: the configuration the runs are compared within (NULL when the log has no configuration line)
-- gpu_count: GPUs the run used (job_mfu.gpus: the log's count, else the job record's, else telemetry's)
-- logged_s: wall-clock seconds the log's intervals cover
-- tokens_per_gpu_s: tokens per second of logged time per GPU
-- mfu: the job's measured MFU (job_mfu.mfu)
-- baseline_job_key: the best smaller run of the same configuration (the highest tokens_per_gpu_s)
-- baseline_job_id: its job id
-- baseline_gpu_count: its GPUs
-- baseline_tokens_per_gpu_s: its tokens per second of logged time per GPU
-- efficiency: tokens_per_gpu_s / baseline_tokens_per_gpu_s (NULL without a baseline)
-- excess_share: share of the job's GPU-hours beyond what linear scaling from the baseline needed,
-- greatest(1 - efficiency, 0)
-- lacks: what is missing to judge the job (no configuration line, no throughput measured, no smaller run of
-- the same configuration); NULL when it has a baseline
with config as (
    -- the latest value each configuration field took in the job's log
    select
        job_key,
        bool_or(event = 'config' and (model is not null or global_batch is not null or parallel is not null))
            as configured,
        arg_max(model, ts) filter (where event = 'config' and model is not null) as model,
        arg_max(global_batch, ts) filter (where event = 'config' and global_batch is not null) as global_batch,
        arg_max(parallel, ts) filter (where event = 'config' and parallel is not null) as parallel,
        max(seq_len) as seq_len
    from int_train_intervals
    group by job_key
),

runs as (
    select
        m.job_key,
        m.job_id,
        m.job_name,
        m.team,
        m.state,
        m.started_at,
        m.ended_at,
        coalesce(c.configured, false) as configured,
        c.model,
        c.global_batch,
        c.seq_len,
        nullif(array_to_string(
            list_filter(string_split(c.parallel, ','), lambda p: not starts_with(trim(p), 'dp=')), ','
        ), '') as layout,
        m.params,
        m.gpu_model,
        m.gpus as gpu_count,
        m.logged_s,
        m.tokens_per_s / nullif(m.gpus, 0) as tokens_per_gpu_s,
        m.mfu
    from job_mfu as m
    left join config as c on c.job_key = m.job_key
),

keyed as (
    select
        *,
        case when configured then printf(
            'model=%s params=%s batch=%s seq=%s layout=%s gpu=%s',
            coalesce(model, '?'), coalesce(printf('%.4g', params), '?'), coalesce(printf('%g', global_batch), '?'),
            coalesce(printf('%g', seq_len), '?'), coalesce(layout, '?'), coalesce(gpu_model, '?')
        ) end as config_key
    from runs
),

baselines as (
    -- the smaller run of the same configuration with the highest per-GPU throughput
    select
        j.job_key,
        b.job_key as baseline_job_key,
        b.job_id as baseline_job_id,
        b.gpu_count as baseline_gpu_count,
        b.tokens_per_gpu_s as baseline_tokens_per_gpu_s
    from keyed as j
    inner join keyed as b
        on b.config_key = j.config_key and b.gpu_count < j.gpu_count and b.tokens_per_gpu_s > 0
    qualify row_number() over (partition by j.job_key order by b.tokens_per_gpu_s desc, b.job_key) = 1
)

select
    k.job_key,
    k.job_id,
    k.job_name,
    k.team,
    k.state,
    k.started_at,
    k.ended_at,
    k.configured,
    k.model,
    k.global_batch,
    k.seq_len,
    k.layout,
    k.params,
    k.gpu_model,
    k.config_key,
    k.gpu_count,
    k.logged_s,
    k.tokens_per_gpu_s,
    k.mfu,
    b.baseline_job_key,
    b.baseline_job_id,
    b.baseline_gpu_count,
    b.baseline_tokens_per_gpu_s,
    k.tokens_per_gpu_s / b.baseline_tokens_per_gpu_s as efficiency,
    greatest(1 - k.tokens_per_gpu_s / b.baseline_tokens_per_gpu_s, 0) as excess_share,
    case
        when not k.configured then 'its training log gives no model configuration (model, global batch, parallel layout)'
        when k.tokens_per_gpu_s is null then 'no throughput measured from its training log'
        when b.job_key is null then 'no smaller run of the same configuration'
    end as lacks
from keyed as k
left join baselines as b on b.job_key = k.job_key
