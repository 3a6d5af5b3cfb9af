-- grain: one row per billed resource_id
-- depends_on: int_resource_files, billing_line_items
-- The latest known attributes of each resource on the bill (tags and names can change over time): each
-- attribute from the resource's latest line that has one, ties going to the largest value. Merged from what
-- each bill file says about the resource (int_resource_files, kept up to date by file), so a night reads the
-- files delivered since the last, not the whole bill. A commitment's own lines (an unused reservation's
-- hours, a Savings Plan's fee: resource_id is the commitment) describe no machine, so they make no resource;
-- COM001 prices them. billing_line_items is named for what reads this (the assets' lineage, fingerprints):
-- int_resource_files is built from it.
select
    resource_id,
    max(provider).v as provider,
    max(account_id).v as account_id,
    max(region_id).v as region_id,
    max(resource_name).v as resource_name,
    max(resource_type).v as resource_type,
    max(service_name).v as service_name,
    max(instance_type).v as instance_type,
    max(billed_gpu_count).v as billed_gpu_count,
    max(host_tag).v as host_tag,
    max(team).v as team,
    max(project).v as project,
    max(owner).v as owner,
    max(tags).v as tags,
    max(currency).v as currency,
    min(first_seen) as first_seen,
    max(last_seen) as last_seen
from int_resource_files
group by resource_id
