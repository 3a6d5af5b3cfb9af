-- grain: one row per host line of one hosts CSV
-- depends_on: the relation `_src` (one row per host, typed), built by
--             pipelines/ingest/readers/hosts_csv.py
-- Tags normalised (keys as in billing_line_items.tags); everything else as the file gave it.
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
