-- grain: one row per GPU-slice (resource x hour x slice x GPU x job, as gpu_job_hours has them; a GPU
--   reported under two host names is one GPU) and one per billed GPU resource-hour without any telemetry
--   (gpu_id NULL: the whole instance)
-- depends_on: gpu_job_hours, gpu_job_spans, gpu_billed_hours, job_scaling, resources, inventory_hosts, spare_pools
-- Which GPU rule claims each GPU-slice, and why: the GPU rules' precedence as data. `claims` lists every
-- claim a rule makes on the slice, in precedence order, each with the tests it must pass; the first claim
-- whose tests all hold is the slice's (`claimed_by(claims, $claim_thresholds)`, sql/macros/
-- macro_claimed_by.sql), and a GPU rule prices only the slices it claims. A test compares a measure of the
-- slice with a threshold named `<rule id>.<param>`, the owning rule's own param, which the rules bind at
-- evaluation (rules/_claims.py): so a rule's thresholds are declared once, in its own params, and a new GPU
-- rule adds one claim here. Precedence (docs/gpu.md): GPU004 (a failed job's GPU-slices, and billed hours
-- without telemetry) before `spare` (a `spares:` host with no job on it: a policy cost, no rule's waste)
-- before GPU001 (every GPU of the instance idle in that part of the hour) before GPU002 (a GPU its job did
-- not use, or whose p95 util a MIG slice or a smaller GPU would hold) before GPU003 (a GPU starved of input)
-- before GPU006 (a job's GPUs beyond what linear scaling from the best smaller run of its configuration
-- needed) before GPU005 (what is left of a job's GPU time).
-- resource_id: the billed GPU resource (gpu_job_hours.resource_id)
-- hour: UTC start of the hour the slice lies in
-- slice_start: start of the part of the hour (the hour itself for an hour without telemetry)
-- slice_end: end of the part of the hour
-- gpu_id: the GPU (gpu_job_hours.gpu_id); NULL for a billed hour without telemetry (the whole instance)
-- job_key: the job the slice belongs to (gpu_job_hours.job_key); NULL when none ran
-- spare: the resource is a host of the `spares:` pool (spare_pools) and no job ran on any of its GPUs in this
-- part of the hour
-- instance_util: the busiest GPU of the instance in this part of the hour (mean util, or SM activity x 100
-- where DCGM reports it, whichever is higher), percent; what GPU001's idle claim tests
-- job_util_mean: the GPU's mean util over its job's whole run (every slice of the job, not one week's)
-- job_util_p95: the GPU's highest hourly p95 util over its job's run
-- job_util_stddev: the spread of the GPU's util samples over its job's run (pooled from the exact sums)
-- job_power_pct: the GPU's mean power over its job's run, percent of its power limit (NULL when unknown)
-- job_runtime_minutes: the job's runtime (gpu_job_spans; NULL for a failed job, which has no span)
-- job_gpu_rank: the GPU's place among its job's GPUs (0 first, by resource and GPU id)
-- job_excess_gpus: the job's GPUs (telemetry's count) x job_scaling.excess_share: how many of them linear
-- scaling from the best smaller run of its configuration did not need; NULL without such a run
-- job_scaling_efficiency: the job's per-GPU throughput over that run's (job_scaling.efficiency)
-- claims: the claims on the slice, sorted by precedence (lower first), each with its precedence, rule_id,
-- claim (failed_job, no_telemetry, spare, idle_instance, unused_gpu, low_peak, starved, beyond_linear or
-- job_gpu) and tests (param, measure, op); a claim holds when every `measure op threshold(param)` holds, and a
-- NULL measure fails
with slices as (
    -- a GPU reported under two host names (node name and FQDN) is one GPU: the first host name's row
    select *
    from gpu_job_hours
    where resource_id is not null
    qualify row_number() over (
        partition by resource_id, gpu_id, slice_start, job_key order by host
    ) = 1
),

instance_slices as (
    -- how busy the instance was in each part of an hour (every row, whichever host name reported it)
    select
        resource_id,
        hour,
        slice_start,
        max(greatest(util_mean, 100 * sm_active_mean)) as instance_util,
        bool_or(job_key is not null) as instance_job
    from gpu_job_hours
    where resource_id is not null
    group by resource_id, hour, slice_start
),

spare_resources as (
    -- the resources the `spares:` pool names: a glob on a host name their telemetry reports (full or short),
    -- and every tag it gives on their bill or their host's inventory record
    select distinct h.resource_id
    from (
        select distinct
            resource_id,
            lower(trim(host)) as host,
            lower(split_part(trim(host), '.', 1)) as host_key
        from gpu_job_hours
        where resource_id is not null
    ) as h
    left join resources as r on r.resource_id = h.resource_id
    left join (
        select
            lower(split_part(trim(host), '.', 1)) as host_key,
            arg_max(tags, coalesce(launched_at, '-infinity'::timestamp)) filter (where tags is not null) as tags
        from inventory_hosts
        group by 1
    ) as i on i.host_key = h.host_key
    inner join spare_pools as p
        on (
            p.match_hosts is null
            or len(list_filter(p.match_hosts, lambda g: h.host glob g or h.host_key glob g)) > 0
        )
        and (
            p.match_tags is null or cardinality(p.match_tags) = 0
            or len(list_filter(
                map_keys(p.match_tags), lambda k: coalesce(i.tags[k], r.tags[k]) is distinct from p.match_tags[k]
            )) = 0
        )
),

job_gpus as (
    -- each GPU of a job over the job's whole run, as GPU002 and GPU003 judge it
    select
        job_key,
        resource_id,
        gpu_id,
        sum(util_sum) / nullif(sum(util_samples), 0) as util_mean,
        max(util_p95) as util_p95,
        sqrt(greatest(
            sum(util_sumsq) / nullif(sum(util_samples), 0) - power(sum(util_sum) / nullif(sum(util_samples), 0), 2),
            0
        )) as util_stddev,
        sum(power_mean_w * samples) / nullif(sum(samples) filter (where power_mean_w is not null), 0)
            as power_mean_w,
        max(power_limit_w) as power_limit_w,
        -- GPU006 claims the first job_excess_gpus of them
        row_number() over (partition by job_key order by resource_id, gpu_id) - 1 as job_gpu_rank,
        count(*) over (partition by job_key) as job_gpu_count
    from slices
    where job_key is not null
    group by job_key, resource_id, gpu_id
),

units as (
    select
        s.resource_id,
        s.hour,
        s.slice_start,
        s.slice_end,
        s.gpu_id,
        s.job_key,
        coalesce(job_failed(s.job_state), false) as failed_job,
        sr.resource_id is not null and not i.instance_job as spare,
        i.instance_util::double as instance_util,
        g.util_mean::double as job_util_mean,
        g.util_p95::double as job_util_p95,
        g.util_stddev::double as job_util_stddev,
        (100 * g.power_mean_w / nullif(g.power_limit_w, 0))::double as job_power_pct,
        (sp.runtime_s / 60)::double as job_runtime_minutes,
        g.job_gpu_rank,
        (g.job_gpu_count * sc.excess_share)::double as job_excess_gpus,
        sc.efficiency::double as job_scaling_efficiency,
        sc.gpu_count::double as job_scaling_gpus
    from slices as s
    inner join instance_slices as i
        on i.resource_id = s.resource_id and i.hour = s.hour and i.slice_start = s.slice_start
    left join job_gpus as g on g.job_key = s.job_key and g.resource_id = s.resource_id and g.gpu_id = s.gpu_id
    left join gpu_job_spans as sp on sp.job_key = s.job_key
    left join job_scaling as sc on sc.job_key = s.job_key
    left join spare_resources as sr on sr.resource_id = s.resource_id
),

no_telemetry as (
    -- billed GPU resource-hours no GPU reported in (no gpu_job_hours row at all)
    select
        b.resource_id,
        b.hour
    from gpu_billed_hours as b
    where not exists (
        select 1 from gpu_job_hours as h where h.resource_id = b.resource_id and h.hour = b.hour
    )
),

claimed as (
    -- every claim a rule makes on the slice (NULL: the rule makes none here), sorted by precedence below
    select
        *,
        [
            -- GPU004: the GPU-slices of a failed, cancelled, timed-out or out-of-memory job, whatever they
            -- measured
            case when failed_job then {'precedence': 10, 'rule_id': 'GPU004', 'claim': 'failed_job', 'tests': []} end,
            -- spare: a `spares:` host with no job on any of its GPUs, whatever they measured: capacity kept
            -- on purpose, a policy cost the report holds against the policy share, never GPU001's waste
            case when spare then {'precedence': 15, 'rule_id': 'spare', 'claim': 'spare', 'tests': []} end,
            -- GPU001: every GPU of the instance at or under its idle threshold in this part of the hour (no
            -- utilisation reported counts as idle: nobody else can say the GPUs worked)
            {'precedence': 20, 'rule_id': 'GPU001', 'claim': 'idle_instance', 'tests': [
                {'param': 'GPU001.max_util_pct', 'measure': coalesce(instance_util, 0), 'op': '<='}
            ]},
            -- GPU002: a GPU its job (run long enough) did not use ...
            case when job_runtime_minutes is not null then {'precedence': 30, 'rule_id': 'GPU002', 'claim': 'unused_gpu', 'tests': [
                {'param': 'GPU002.min_runtime_minutes', 'measure': job_runtime_minutes, 'op': '>='},
                {'param': 'GPU002.unused_util_pct', 'measure': job_util_mean, 'op': '<='}
            ]} end,
            -- ... or whose p95 util is low enough for a MIG slice or a smaller GPU to hold it
            case when job_runtime_minutes is not null then {'precedence': 30, 'rule_id': 'GPU002', 'claim': 'low_peak', 'tests': [
                {'param': 'GPU002.min_runtime_minutes', 'measure': job_runtime_minutes, 'op': '>='},
                {'param': 'GPU002.max_peak_util_pct', 'measure': job_util_p95, 'op': '<='}
            ]} end,
            -- GPU003: a GPU of a job (run long enough) that worked in bursts at low power, waiting for input
            -- (power unknown is no reason to doubt the bursts)
            case when job_runtime_minutes is not null then {'precedence': 40, 'rule_id': 'GPU003', 'claim': 'starved', 'tests': [
                {'param': 'GPU003.min_runtime_minutes', 'measure': job_runtime_minutes, 'op': '>='},
                {'param': 'GPU003.min_mean_util_pct', 'measure': job_util_mean, 'op': '>='},
                {'param': 'GPU003.max_mean_util_pct', 'measure': job_util_mean, 'op': '<='},
                {'param': 'GPU003.min_util_stddev', 'measure': job_util_stddev, 'op': '>='},
                {'param': 'GPU003.min_peak_util_pct', 'measure': job_util_p95, 'op': '>='},
                {'param': 'GPU003.max_power_pct', 'measure': coalesce(job_power_pct, 0), 'op': '<='}
            ]} end,
            -- GPU006: a GPU of a job (run on enough GPUs) among the first job_excess_gpus of it, the GPU-hours
            -- beyond what linear scaling from the best smaller run of its configuration needed
            case when job_runtime_minutes is not null and job_gpu_rank < job_excess_gpus then {'precedence': 45, 'rule_id': 'GPU006', 'claim': 'beyond_linear', 'tests': [
                {'param': 'GPU006.min_gpus', 'measure': job_scaling_gpus, 'op': '>='},
                {'param': 'GPU006.min_scaling_efficiency', 'measure': job_scaling_efficiency, 'op': '<='}
            ]} end,
            -- GPU005: what is left of the GPU time of a job that did not fail (it prices the jobs whose MFU is
            -- low)
            case when job_runtime_minutes is not null then {'precedence': 50, 'rule_id': 'GPU005', 'claim': 'job_gpu', 'tests': []} end
        ] as claim_list
    from units
    union all by name
    -- GPU004: billed hours without telemetry (its zombie hours when no job ran after one ended; GPU001 can
    -- only call them insufficient data)
    select
        resource_id,
        hour,
        hour as slice_start,
        hour + interval 1 hour as slice_end,
        [{'precedence': 10, 'rule_id': 'GPU004', 'claim': 'no_telemetry', 'tests': []}] as claim_list
    from no_telemetry
)

select
    resource_id,
    hour,
    slice_start,
    slice_end,
    gpu_id,
    job_key,
    spare,
    instance_util,
    job_util_mean,
    job_util_p95,
    job_util_stddev,
    job_power_pct,
    job_runtime_minutes,
    job_gpu_rank,
    job_excess_gpus,
    job_scaling_efficiency,
    list_sort(list_filter(
        claim_list::struct(
            precedence integer, rule_id varchar, claim varchar,
            tests struct(param varchar, measure double, op varchar)[]
        )[],
        lambda c: c is not null
    )) as claims
from claimed
