-- grain: one row per scheduler job on a billed GPU instance that ran in the lookback
-- depends_on: jobs_enriched, resources, job_checkpoint_writes, gpu_purchase_hours (marts only)
-- params: $lookback_start, $window_end
-- Each job with its job type (the job name without its trailing run number: llm-pretrain-train-41871 is
-- llm-pretrain-train), where it ran (provider, region, instance family of its first billed resource), its
-- GPU-hours and GPU cost, and the checkpoints its run wrote while it ran (job_checkpoint_writes: the lineage
-- STO001 and GPU004 read). expected_loss_h is the hours of work an interruption at a uniformly random moment
-- loses since the last checkpoint (or the start): sum(gap^2) / (2 x sum(gap)) over the gaps between the
-- start, each checkpoint and the end; without checkpoints it is half the runtime.
with jobs as (
    select
        j.job_key,
        j.job_id,
        j.job_name,
        job_type(coalesce(j.job_name, j.run_id)) as job_type,
        j.team,
        j.project,
        j.state,
        j.started_at,
        j.ended_at,
        greatest(epoch(j.ended_at) - epoch(j.started_at), 0) / 3600 as runtime_h,
        greatest(coalesce(j.nodes, 1), 1) as nodes,
        j.gpu_hours,
        j.cost::double as cost,
        j.currency,
        r.provider,
        r.region_id,
        split_part(r.instance_type, '.', 1) as instance_family
    from jobs_enriched as j
    inner join resources as r on r.resource_id = j.resource_ids[1]
    where j.started_at < $window_end::timestamp
        and j.ended_at > $lookback_start::timestamp
        and j.ended_at > j.started_at
        and j.job_name is not null
        and r.instance_type is not null
        and r.pricing_basis = 'bill'
        and j.gpu_hours > 0
),

checkpoints as (
    select w.job_key, w.written as ts
    from job_checkpoint_writes as w
    semi join jobs as j on j.job_key = w.job_key
),

points as (
    select job_key, started_at as ts from jobs
    union all
    select job_key, ts from checkpoints
    union all
    select job_key, ended_at as ts from jobs
),

gaps as (
    select
        job_key,
        (epoch(ts) - epoch(lag(ts) over (partition by job_key order by ts))) / 3600 as gap_h
    from points
),

loss as (
    select
        job_key,
        sum(gap_h * gap_h) / nullif(2 * sum(gap_h), 0) as expected_loss_h,
        max(gap_h) as longest_gap_h
    from gaps
    where gap_h is not null
    group by job_key
),

list_rates as (
    -- the on-demand (list) price of a GPU-hour of the family in the region, from the bill's usage lines
    select
        provider,
        region_id,
        instance_family,
        currency,
        sum(list_cost) / nullif(sum(gpu_hours), 0) as list_per_gpu_hour,
        -- the share of the family's hours in the region a commitment covered: moving them to spot would
        -- leave that commitment paid and unused until it ends
        sum(instance_hours) filter (where purchase = 'commitment') / sum(instance_hours) as commitment_share
    from gpu_purchase_hours
    where list_cost > 0
    group by provider, region_id, instance_family, currency
)

select
    j.*,
    coalesce(c.checkpoints, 0) as checkpoints,
    l.expected_loss_h,
    l.longest_gap_h,
    p.list_per_gpu_hour::double as list_per_gpu_hour,
    coalesce(p.commitment_share, 0)::double as commitment_share
from jobs as j
left join (select job_key, count(*) as checkpoints from checkpoints group by job_key) as c on c.job_key = j.job_key
left join loss as l on l.job_key = j.job_key
left join list_rates as p
    on p.provider is not distinct from j.provider
    and p.region_id is not distinct from j.region_id
    and p.instance_family = j.instance_family
    and p.currency is not distinct from j.currency
order by j.job_type, j.started_at, j.job_key
