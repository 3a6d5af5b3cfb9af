-- COST001 unattributed-spend
-- depends_on: cost_hourly, resources, jobs_enriched (marts only)
-- params: $window_start, $window_end, $min_spend, $lookback_days
-- One finding per resource (or, for lines without a resource id, per service) whose effective spend in the
-- window carries no team tag. GPU resources first. A suggested owner, best evidence first: the team of the
-- scheduler jobs that ran on the resource (the job record's own team), else the team that owns most tagged
-- spend of the same project, of the same owner, or of the host the resource is named after.
with untagged as (
    select
        coalesce(c.resource_id, 'service:' || coalesce(c.service_name, '(no service name)')) as resource_key,
        c.resource_id,
        c.billing_currency as currency,
        any_value(c.provider) as provider,
        any_value(c.account_id) as account_id,
        any_value(c.region_id) as region_id,
        any_value(c.service_name) as service_name,
        any_value(c.service_category) as service_category,
        any_value(c.instance_type) as instance_type,
        any_value(c.project) filter (where c.project is not null) as project,
        any_value(c.owner) filter (where c.owner is not null) as owner,
        sum(c.effective_cost) as spend,
        count(distinct c.hour) as hours
    from cost_hourly as c
    where c.hour >= $window_start and c.hour < $window_end and c.team is null
    group by all
    having sum(c.effective_cost) >= $min_spend
),

tagged as (
    -- who owns what, from the tagged spend of the trailing lookback
    select
        c.team,
        c.project,
        c.owner,
        r.host,
        c.effective_cost
    from cost_hourly as c
    left join resources as r on r.resource_id = c.resource_id
    where c.team is not null
        and c.hour >= $window_start::timestamp - to_days($lookback_days)
        and c.hour < $window_end
),

by_jobs as (
    -- jobs whose record names a team, on this resource during the lookback, weighted by GPU-hours
    select
        resource_id,
        arg_max(team, weight) as team,
        max(weight) / nullif(sum(weight), 0) as share,
        sum(jobs) as jobs,
        any_value(scheduler) as scheduler
    from (
        select
            u.resource_id,
            j.team,
            any_value(j.scheduler) as scheduler,
            count(*) as jobs,
            sum(coalesce(j.gpu_hours, 0) + 1e-9) as weight
        from jobs_enriched as j, unnest(j.resource_ids) as u(resource_id)
        where j.team is not null
            and j.team_source = 'record'
            and j.started_at < $window_end
            and coalesce(j.ended_at, $window_end) > $window_start::timestamp - to_days($lookback_days)
        group by all
    )
    group by resource_id
),

by_project as (
    select project as key, arg_max(team, spend) as team, max(spend) / sum(spend) as share
    from (select project, team, sum(effective_cost) as spend from tagged where project is not null group by all)
    group by project
),

by_owner as (
    select owner as key, arg_max(team, spend) as team, max(spend) / sum(spend) as share
    from (select owner, team, sum(effective_cost) as spend from tagged where owner is not null group by all)
    group by owner
),

by_host as (
    select lower(host) as key, arg_max(team, spend) as team, max(spend) / sum(spend) as share
    from (select host, team, sum(effective_cost) as spend from tagged where host is not null group by all)
    group by lower(host)
),

described as (
    select
        u.*,
        r.resource_type,
        r.resource_name,
        r.host,
        coalesce(r.host, r.resource_name) as host_name,
        coalesce(r.gpu_count, 0) as gpu_count,
        r.gpu_model,
        coalesce(r.gpu_count, 0) > 0 as is_gpu
    from untagged as u
    left join resources as r on r.resource_id = u.resource_id
),

suggested as (
    select
        d.*,
        coalesce(jb.team, p.team, o.team, h.team) as suggested_team,
        case
            when jb.team is not null then printf(
                '%d %s job(s) ran on it, %.0f%% of their GPU-hours team %s''s',
                jb.jobs, coalesce(jb.scheduler, 'scheduler'), 100 * jb.share, jb.team
            )
            when p.team is not null then printf('project %s is %.0f%% team %s''s spend', d.project, 100 * p.share, p.team)
            when o.team is not null then printf('owner %s''s other spend is %.0f%% team %s', d.owner, 100 * o.share, o.team)
            when h.team is not null then printf('host %s is tagged team %s', h.key, h.team)
        end as suggestion_basis
    from described as d
    left join by_jobs as jb on jb.resource_id = d.resource_id
    left join by_project as p on p.key = d.project
    left join by_owner as o on o.key = d.owner
    -- a resource named after a tagged host (gpu-node-07-scratch -> gpu-node-07), or the host itself
    left join by_host as h
        on lower(d.host_name) = h.key or starts_with(lower(d.host_name), h.key || '-')
    qualify row_number() over (partition by d.resource_key, d.currency order by length(h.key) desc nulls last) = 1
)

select
    resource_key as resource_id,
    coalesce(
        resource_type,
        case when resource_id is null then 'charge without a resource id' when is_gpu then 'GPU instance' end,
        'resource'
    ) as resource_type,
    provider,
    account_id,
    region_id,
    null::varchar as team,
    project,
    owner,
    null::varchar as job_id,
    'waste' as status,
    printf(
        '%s %.2f of %s spend on %s%s has no team tag%s.',
        currency, spend, case when is_gpu then 'GPU' else lower(coalesce(service_category, 'other')) end,
        case
            when resource_id is null then coalesce(service_name, 'charges') || ' (no resource id)'
            else concat_ws(' ', instance_type, resource_id)
        end,
        case
            when is_gpu then printf(' (%s, %d×%s)', coalesce(host, 'no host'), gpu_count, coalesce(gpu_model, 'GPU'))
            else ''
        end,
        case
            when suggested_team is not null then printf('; suggested owner: team %s (%s)', suggested_team, suggestion_basis)
            else ''
        end
    ) as reason,
    json_object(
        'amount_at_stake', round(spend, 2),
        'gpu', is_gpu,
        'gpu_count', gpu_count,
        'gpu_model', gpu_model,
        'host', host,
        'instance_type', instance_type,
        'service_name', service_name,
        'service_category', service_category,
        'billed_hours', hours,
        'suggested_team', suggested_team,
        'suggestion_basis', suggestion_basis
    ) as evidence,
    spend::decimal(18, 6) as estimated_waste,
    currency,
    'amount at stake, not waste: effective cost in the week of the lines without a team tag' as waste_basis
from suggested
order by is_gpu desc, estimated_waste desc, resource_id
