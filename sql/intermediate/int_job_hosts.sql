-- grain: one row per started job x host it ran on (host_key = lower-case short host name)
-- depends_on: int_jobs, inventory_hosts
-- A job's hosts are the scheduler's node names; a record that names cloud instance ids instead
-- reaches its hosts through the inventory (ec2_instances, hosts_csv).
with started as (
    select
        job_key,
        started_at,
        ended_at,
        gpu_indices,
        hosts,
        instance_ids
    from int_jobs
    where started_at is not null
),

named as (
    select
        job_key,
        unnest(hosts) as host
    from started
),

by_instance as (
    select
        s.job_key,
        i.host
    from (select job_key, unnest(instance_ids) as instance_id from started) as s
    inner join inventory_hosts as i on lower(i.instance_id) = lower(trim(s.instance_id))
),

both_sources as (
    select job_key, host from named
    union
    select job_key, host from by_instance
)

select distinct
    b.job_key,
    lower(split_part(trim(b.host), '.', 1)) as host_key,
    s.started_at,
    s.ended_at,
    s.gpu_indices
from both_sources as b
inner join started as s on s.job_key = b.job_key
where b.host is not null and trim(b.host) <> ''
