-- grain: one row per host (machine) an inventory source knows, per source
-- Written by ec2_instances (boto3 DescribeInstances) and hosts_csv; resolves host <-> instance id.
create table if not exists inventory_hosts (
    host varchar not null,                -- the name telemetry and schedulers use
    instance_id varchar,                  -- cloud instance id (the bill's resource_id for EC2)
    resource_id varchar,                  -- billing resource id when it differs from instance_id
    private_dns varchar,
    private_ip varchar,
    instance_type varchar,
    provider varchar,
    region_id varchar,
    launched_at timestamp,
    terminated_at timestamp,
    tags map(varchar, varchar),           -- normalised keys
    source varchar not null,
    x_source_file varchar not null,
    x_file_id varchar not null
);
