-- grain: one row per host (host_key) a `pricing:` entry matches: the first entry it matches
-- depends_on: int_gpu_slices, int_job_hosts, int_jobs, inventory_hosts, gpu_instance_types, pricing_entries
-- The hosts are those telemetry, the inventory (hosts_csv, ec2_instances) or a scheduler's jobs name, by
-- their short lower-case name (host_key). An entry matches when every key it gives matches: `host` (a glob
-- on any of the host's names), `gpu_model` (a glob on the model telemetry reports, else the inventory
-- instance type's), `cluster` (a glob on the inventory tag `cluster`, else the cluster of its latest job),
-- `tag` (inventory tags, each equal). Whether the host is billed is decided in int_host_resources: a
-- billed host keeps its bill.
-- gpus_seen: distinct physical GPUs its telemetry reported (MIG instances of one GPU count once)
-- power_limit_w: the highest GPU power limit its telemetry reported (the nameplate when none is given)
-- first_telemetry: UTC start of the first hour its telemetry covers
-- first_seen: UTC start of the first hour any source saw it (telemetry, a job on it, its launch)
with telemetry as (
    select
        lower(split_part(trim(host), '.', 1)) as host_key,
        list(distinct lower(trim(host))) as names,
        count(distinct split_part(gpu_id, '/mig', 1)) as gpus_seen,
        any_value(gpu_model) filter (where gpu_model is not null) as gpu_model,
        max(power_limit_w) as power_limit_w,
        min(hour) as first_telemetry
    from int_gpu_slices
    group by 1
),

jobs as (
    select
        h.host_key,
        arg_max(j.cluster, j.started_at) filter (where j.cluster is not null) as cluster,
        min(date_trunc('hour', h.started_at)) as first_job
    from int_job_hosts as h
    inner join int_jobs as j on j.job_key = h.job_key
    group by 1
),

inventory as (
    select
        lower(split_part(trim(host), '.', 1)) as host_key,
        list(distinct lower(trim(host))) as names,
        arg_max(instance_type, coalesce(launched_at, '-infinity'::timestamp))
            filter (where instance_type is not null) as instance_type,
        arg_max(tags, coalesce(launched_at, '-infinity'::timestamp)) filter (where tags is not null) as tags,
        min(date_trunc('hour', launched_at)) as launched
    from inventory_hosts
    group by 1
),

hosts as (
    select
        k.host_key,
        list_distinct(flatten([[k.host_key], coalesce(t.names, []), coalesce(i.names, [])])) as names,
        coalesce(
            regexp_replace(t.gpu_model, '^NVIDIA\s+', ''), c.gpu_model
        ) as gpu_model,
        t.gpus_seen,
        c.gpu_count as catalogue_gpus,
        t.power_limit_w,
        i.instance_type,
        i.tags,
        coalesce(nullif(trim(i.tags['cluster']), ''), j.cluster) as cluster,
        t.first_telemetry,
        least(t.first_telemetry, j.first_job, i.launched) as first_seen
    from (
        select host_key from telemetry
        union
        select host_key from jobs
        union
        select host_key from inventory
    ) as k
    left join telemetry as t on t.host_key = k.host_key
    left join jobs as j on j.host_key = k.host_key
    left join inventory as i on i.host_key = k.host_key
    left join gpu_instance_types as c on lower(c.instance_type) = lower(i.instance_type)
)

select
    h.*,
    e.position,
    e.basis,
    e.currency,
    e.source
from hosts as h
inner join pricing_entries as e
    on (e.match_host is null or len(list_filter(h.names, lambda n: n glob e.match_host)) > 0)
    and (e.match_gpu_model is null or lower(h.gpu_model) glob e.match_gpu_model)
    and (e.match_cluster is null or lower(h.cluster) glob e.match_cluster)
    and (
        e.match_tags is null or cardinality(e.match_tags) = 0
        or len(list_filter(
            map_keys(e.match_tags), lambda k: h.tags is null or h.tags[k] is distinct from e.match_tags[k]
        )) = 0
    )
qualify row_number() over (partition by h.host_key order by e.position) = 1
