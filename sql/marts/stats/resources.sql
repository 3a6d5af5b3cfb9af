-- What the `resources` asset's metadata shows after a build: GPU resources, their GPUs, and the telemetry
-- hosts no bill line matched.
select
    count(*) filter (where gpu_count > 0) as gpu_resources,
    coalesce(sum(gpu_count), 0)::bigint as gpus,
    (select count(*) from int_host_resources where resource_id is null) as telemetry_hosts_without_bill
from resources
