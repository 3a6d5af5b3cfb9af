-- grain: one row per training line of one throughput log (JSON lines or CSV)
-- depends_on: the relation `_src` (one row per line, typed: _line, ts UTC, the numeric fields, job_id, host,
--             labels), built by pipelines/ingest/readers/train_log.py
-- The tokens each line stands for, from the first field the log has: the rise of a cumulative token count,
-- the rise of a cumulative sample count x seq_len, tokens (or samples x seq_len) per step x the steps since
-- the previous line ($tokens_per_line: per line), or a rate x the wall-clock seconds since the previous line.
-- "Previous line" is within the file and the same host and job; a counter that goes down starts a new run.
-- Checkpoint and configuration lines (`event`) carry no tokens and are no step's previous line.
with lined as (
    select
        *,
        coalesce(nullif(trim(host), ''), $host) as host_name,
        coalesce(nullif(trim(job_id), ''), $job_id) as job_name,
        -- a step line without a sequence length takes the one the file's configuration lines give
        coalesce(seq_len, max(seq_len) filter (where event = 'config') over (), $seq_len) as seq,
        coalesce(gpus, $gpus) as gpu_count,
        coalesce(samples, $batch_size) as step_samples,
        coalesce(event, 'step') as event_kind
    from _src
),

lagged as (
    select
        *,
        lag(step) over run as prev_step,
        lag(tokens_total) over run as prev_tokens_total,
        lag(samples_total) over run as prev_samples_total,
        lag(ts) over run as prev_ts
    from lined
    window run as (partition by host_name, job_name, event_kind order by _line)
),

counted as (
    select
        *,
        case when event_kind = 'step' and step > prev_step then step - prev_step end as steps_since,
        case when ts > prev_ts then epoch(ts) - epoch(prev_ts) end as seconds_since
    from lagged
)

select
    ts,
    host_name as host,
    job_name as job_id,
    step::bigint as step,
    steps_since::integer as steps,
    case
        when event_kind <> 'step' then null
        when tokens_total >= prev_tokens_total then tokens_total - prev_tokens_total
        when samples_total >= prev_samples_total and seq is not null then (samples_total - prev_samples_total) * seq
        when tokens is not null then tokens * case when $tokens_per_line then 1 else coalesce(steps_since, 1) end
        when step_samples is not null and seq is not null
            then step_samples * seq * case when $tokens_per_line then 1 else coalesce(steps_since, 1) end
        when tokens_per_s is not null and seconds_since is not null
            then tokens_per_s * seconds_since * case when $rate_per_gpu then gpu_count else 1 end
    end as tokens,
    case
        when event_kind <> 'step' then null
        when tokens_total >= prev_tokens_total then 'tokens_total'
        when samples_total >= prev_samples_total and seq is not null then 'samples_total'
        when tokens is not null then 'tokens'
        when step_samples is not null and seq is not null then 'samples'
        when tokens_per_s is not null and seconds_since is not null then 'tokens_per_s'
    end as tokens_from,
    step_s * $time_scale as step_s,
    data_s * $time_scale as data_s,
    coalesce(params, $params) as params,
    gpu_count::integer as gpus,
    loss,
    labels,
    $source_name as source,
    $source_file as x_source_file,
    $file_id as x_file_id,
    _line as x_line,
    event_kind as event,
    save_s,
    checkpoint_path,
    model,
    global_batch,
    seq as seq_len,
    parallel
from counted
