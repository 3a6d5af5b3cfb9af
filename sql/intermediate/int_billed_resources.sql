-- grain: one row per billed resource_id
-- depends_on: billing_line_items
-- The latest known attributes of each resource on the bill (tags and names can change over time). A
-- commitment's own lines (an unused reservation's hours, a Savings Plan's fee: resource_id is the
-- commitment) describe no machine, so they make no resource; COM001 prices them.
with lines as (
    select *
    from billing_line_items
    where resource_id is not null
        and resource_id is distinct from commitment_discount_id
)

select
    resource_id,
    arg_max(provider_name, charge_period_start) filter (where provider_name is not null) as provider,
    arg_max(sub_account_id, charge_period_start) filter (where sub_account_id is not null) as account_id,
    arg_max(region_id, charge_period_start) filter (where region_id is not null) as region_id,
    arg_max(resource_name, charge_period_start) filter (where resource_name is not null) as resource_name,
    arg_max(resource_type, charge_period_start) filter (where resource_type is not null) as resource_type,
    arg_max(service_name, charge_period_start) filter (where service_name is not null) as service_name,
    arg_max(x_instance_type, charge_period_start) filter (where x_instance_type is not null) as instance_type,
    arg_max(x_gpu_count, charge_period_start) filter (where x_gpu_count is not null) as billed_gpu_count,
    arg_max(x_host, charge_period_start) filter (where x_host is not null) as host_tag,
    arg_max(team, charge_period_start) filter (where team is not null) as team,
    arg_max(project, charge_period_start) filter (where project is not null) as project,
    arg_max(owner, charge_period_start) filter (where owner is not null) as owner,
    arg_max(tags, charge_period_start) filter (where tags is not null) as tags,
    arg_max(billing_currency, charge_period_start) as currency,
    min(charge_period_start) as first_seen,
    max(charge_period_end) as last_seen
from lines
group by resource_id
