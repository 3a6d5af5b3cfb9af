-- grain: one row per job with a measured training log and GPU time in the week (job_key)
-- depends_on: job_mfu, job_mfu_hourly, gpu_job_hours, resources
-- params: $window_start, $window_end
-- What a job's training log says it got for its GPUs in the week: the tokens of its log intervals ending in
-- the week (job_mfu_hourly), its GPU-hours and cost in the week (its slices of gpu_job_hours), tokens per
-- GPU-hour and cost per million tokens, and the basis its cost comes from (`bill`, `owned`, `contract`,
-- several joined by '+'): a modelled cost is never shown as a bill. mfu is the job's measured median MFU
-- over its whole log (job_mfu, the figure GPU005 judges).
-- tokens: tokens of the job's log intervals that end in the week
-- gpu_hours: the job's GPU-slices in the week, in GPU-hours; cost: their cost, in currency
-- tokens_per_gpu_hour: tokens / gpu_hours; cost_per_million_tokens: cost / tokens x 1,000,000
with week_tokens as (
    select
        job_key,
        sum(tokens) as tokens,
        sum(logged_s) as logged_s
    from job_mfu_hourly
    where hour >= $window_start and hour < $window_end
    group by job_key
),

week_gpu as (
    select
        s.job_key,
        sum(s.slice_seconds) / 3600 as gpu_hours,
        sum(s.cost) as cost,
        mode(s.currency) as currency,
        string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis) as pricing_basis
    from gpu_job_hours as s
    left join resources as r on r.resource_id = s.resource_id
    where s.hour >= $window_start and s.hour < $window_end
        and s.job_key in (select job_key from week_tokens)
    group by s.job_key
)

select
    m.job_key,
    m.job_id,
    m.job_name,
    coalesce(m.team, '(untagged)') as team,
    coalesce(m.project, '(untagged)') as project,
    m.gpu_model,
    m.gpus,
    m.params,
    m.mfu,
    t.tokens,
    g.gpu_hours,
    t.tokens / nullif(g.gpu_hours, 0) as tokens_per_gpu_hour,
    g.cost,
    coalesce(g.currency, m.currency) as currency,
    g.cost / nullif(t.tokens, 0) * 1000000 as cost_per_million_tokens,
    g.pricing_basis
from job_mfu as m
inner join week_tokens as t on t.job_key = m.job_key
inner join week_gpu as g on g.job_key = m.job_key
where t.tokens > 0
order by m.mfu nulls last, m.job_key
