-- grain: one row per billed resource (resource_id)
-- depends_on: int_billed_resources, int_host_resources, gpu_instance_types, gpu_samples
-- GPU model and count come from the bill (SkuPriceDetails), the built-in instance-type catalogue, or,
-- failing both, the GPUs the telemetry of the resource's host reported.
with telemetry as (
    select
        hr.resource_id,
        string_agg(distinct s.host, ', ' order by s.host) as hosts,
        count(distinct coalesce(s.gpu_uuid, s.gpu_index::varchar)) as gpus_seen,
        any_value(s.gpu_model) as gpu_model_seen
    from gpu_samples as s
    inner join int_host_resources as hr on hr.host = s.host
    where hr.resource_id is not null
    group by hr.resource_id
)

select
    r.resource_id,
    r.resource_name,
    r.resource_type,
    r.provider,
    r.account_id,
    r.region_id,
    r.service_name,
    r.instance_type,
    coalesce(t.hosts, r.host_tag, r.resource_name) as host,
    coalesce(c.gpu_model, regexp_replace(t.gpu_model_seen, '^NVIDIA\s+', '')) as gpu_model,
    coalesce(r.billed_gpu_count, c.gpu_count, t.gpus_seen, 0) as gpu_count,
    c.gpu_memory_gib,
    t.gpus_seen as gpus_reporting,
    r.team,
    r.project,
    r.owner,
    r.tags,
    r.currency,
    r.first_seen,
    r.last_seen
from int_billed_resources as r
left join gpu_instance_types as c on lower(c.instance_type) = lower(r.instance_type)
left join telemetry as t on t.resource_id = r.resource_id
