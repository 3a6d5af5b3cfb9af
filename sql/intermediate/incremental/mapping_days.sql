-- grain: one row per day of the roll-up (int_gpu_slices)
-- depends_on: int_gpu_slices, int_host_resources, resources
-- Where the hosts with slices that day map to: their billed resource, instance id, GPU count and
-- currency.
with day_hosts as (
    select distinct day, host
    from int_gpu_slices
)

select
    d.day,
    bit_xor(hash(concat_ws('|', d.host, hr.resource_id, hr.instance_id, r.gpu_count, r.currency))) as fingerprint
from day_hosts as d
left join int_host_resources as hr on hr.host = d.host
left join resources as r on r.resource_id = hr.resource_id
group by d.day
