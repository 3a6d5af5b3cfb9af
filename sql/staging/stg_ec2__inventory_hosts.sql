-- grain: one row per EC2 instance of one DescribeInstances listing
-- depends_on: the relation `_src` (one row per instance, typed), built by
--             pipelines/ingest/readers/ec2_instances.py
-- Tags normalised (keys as in billing_line_items.tags); everything else as DescribeInstances gave it.
select
    host,
    instance_id,
    resource_id,
    private_dns,
    private_ip,
    instance_type,
    provider,
    region_id,
    launched_at,
    terminated_at,
    normalize_tags(tags_json) as tags,
    $source_name as source,
    $source_file as x_source_file,
    $file_id as x_file_id
from _src
