-- grain: one row per bill file x billed resource_id
-- depends_on: billing_line_items
-- What each file of the bill says about each resource (pipelines/transform/partials.py): the latest value of
-- every attribute as a {t, v} struct (t: the line's charge_period_start, v: the value), so that the largest
-- struct over any set of files is the value of the latest line, ties going to the largest value; and the
-- first and last instants the file charged the resource. int_billed_resources merges these per resource.
-- A commitment's own lines (resource_id is the commitment) describe no machine and are left out.
-- $files names the files whose rows are built; a file delivered again, or gone, rebuilds or drops its own.
-- file_id: the file (ingest_files.file_id)
-- A line without a charge_period_start names no latest value (arg_max's rule) but still makes the row.
-- first_seen: start of the file's first charge period of the resource
-- last_seen: end of its last
with lines as (
    select *
    from billing_line_items
    where resource_id is not null
        and resource_id is distinct from commitment_discount_id
        and x_file_id in (select unnest($files::varchar[]))
)

select
    x_file_id as file_id,
    resource_id,
    max({'t': charge_period_start, 'v': provider_name}) filter (where provider_name is not null and charge_period_start is not null) as provider,
    max({'t': charge_period_start, 'v': sub_account_id}) filter (where sub_account_id is not null and charge_period_start is not null) as account_id,
    max({'t': charge_period_start, 'v': region_id}) filter (where region_id is not null and charge_period_start is not null) as region_id,
    max({'t': charge_period_start, 'v': resource_name}) filter (where resource_name is not null and charge_period_start is not null) as resource_name,
    max({'t': charge_period_start, 'v': resource_type}) filter (where resource_type is not null and charge_period_start is not null) as resource_type,
    max({'t': charge_period_start, 'v': service_name}) filter (where service_name is not null and charge_period_start is not null) as service_name,
    max({'t': charge_period_start, 'v': x_instance_type}) filter (where x_instance_type is not null and charge_period_start is not null)
        as instance_type,
    max({'t': charge_period_start, 'v': x_gpu_count}) filter (where x_gpu_count is not null and charge_period_start is not null) as billed_gpu_count,
    max({'t': charge_period_start, 'v': x_host}) filter (where x_host is not null and charge_period_start is not null) as host_tag,
    max({'t': charge_period_start, 'v': team}) filter (where team is not null and charge_period_start is not null) as team,
    max({'t': charge_period_start, 'v': project}) filter (where project is not null and charge_period_start is not null) as project,
    max({'t': charge_period_start, 'v': owner}) filter (where owner is not null and charge_period_start is not null) as owner,
    max({'t': charge_period_start, 'v': tags}) filter (where tags is not null and charge_period_start is not null) as tags,
    max({'t': charge_period_start, 'v': billing_currency}) filter (where billing_currency is not null and charge_period_start is not null) as currency,
    min(charge_period_start) as first_seen,
    max(charge_period_end) as last_seen
from lines
group by x_file_id, resource_id
