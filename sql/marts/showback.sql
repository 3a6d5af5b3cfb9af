-- grain: one row per month x ISO week (the hours in both) x currency x team x project x kind x rule x service
--   for cost, and per month x week x currency x team x project for waste (kind 'waste')
-- depends_on: cost_hourly, resources, showback_rules, jobs_enriched, storage_prefix_days, int_counted_waste
-- Every cost_hourly row (its effective cost: amortised, so a commitment's up-front fee is already spread
-- onto the usage it covered) lands on a team or stays unallocated. The first `showback:` rule whose match
-- takes the row puts it in that rule's pool, split among teams as the rule says, by month; a row no rule
-- takes is its team tag's direct cost, or unallocated when it has none. A pool the rule finds nobody to
-- split among (no team has any of its measure that month) stays unallocated with the rule named. The
-- shares of a pool telescope (the macro `allocated` over each team's cumulative share), so the teams'
-- parts add up to the pool exactly: sum(cost) per currency is cost_hourly's effective cost
-- (sql/checks/assert_showback_reconciles_with_billing.sql). docs/showback.md explains the rules.
-- Waste is its own rows (kind 'waste', cost 0): the counted findings' estimated waste by the team and
-- project on the finding, in the month its week starts, as `findings` held it when the mart was built.
-- Allocation never moves it, so sum(cost) and sum(waste) side by side never count anything twice.
-- month: first day of the month (UTC)
-- week: Monday of the ISO week; a week across two months has a row in each
-- team: the team the cost lands on; NULL when unallocated (kind 'unallocated') or a finding names none
-- project: the cost's project tag for direct cost; NULL for allocated and unallocated cost
-- kind: direct | allocated | unallocated | waste
-- rule: the showback rule that allocated the cost, or took it and found nobody to split it among
-- method: the rule's split: even | proportional | fixed
-- measure: proportional: spend | gpu_hours | storage_bytes | busy_gpu_hours
-- share: the team's share of the rule's pool that month (0-1)
-- service: the bill's service name of the cost (NULL for waste)
-- cost: effective cost in currency (12 decimals, as cost_hourly)
-- waste: the counted findings' estimated waste (kind 'waste'; 0 otherwise)
-- findings: how many counted findings the waste sums
with cost as (
    select
        date_trunc('month', hour)::date as month,
        date_trunc('week', hour)::date as week,
        billing_currency as currency,
        provider,
        account_id,
        service_name,
        charge_category,
        resource_id,
        team,
        project,
        owner,
        sum(effective_cost) as cost
    from cost_hourly
    group by all
),

-- materialized: its row ids are what `matched` hands back to `taken`; `tag_values`, the value of a tag key on
-- a row: team, project and owner as the bill's row carries them, else the resource's tags
rows_tagged as materialized (
    select
        row_number() over () as row_id,
        c.*,
        map_concat(coalesce(r.tags, map()), map(['team', 'project', 'owner'], [c.team, c.project, c.owner]))
            as tag_values
    from cost as c
    left join resources as r on r.resource_id = c.resource_id
),

matched as (
    select
        t.row_id,
        min(r.position) as position
    from rows_tagged as t
    inner join showback_rules as r
        on
            (r.providers is null or len(list_filter(r.providers, lambda g: lower(t.provider) glob g)) > 0)
            and (r.services is null or len(list_filter(r.services, lambda g: lower(t.service_name) glob g)) > 0)
            and (
                r.charge_categories is null
                or len(list_filter(r.charge_categories, lambda g: lower(t.charge_category) glob g)) > 0
            )
            and (r.accounts is null or len(list_filter(r.accounts, lambda g: lower(t.account_id) glob g)) > 0)
            and (r.resources is null or len(list_filter(r.resources, lambda g: lower(t.resource_id) glob g)) > 0)
            and (
                r.tag_present is null
                or len(list_filter(r.tag_present, lambda k: tag_lookup(t.tag_values, [k]) is null)) = 0
            )
            and (
                r.tag_absent is null
                or len(list_filter(r.tag_absent, lambda k: tag_lookup(t.tag_values, [k]) is not null)) = 0
            )
    group by t.row_id
),

taken as (
    select
        t.*,
        m.position
    from rows_tagged as t
    left join matched as m on m.row_id = t.row_id
),

-- each team's direct cost: what no rule took and a team tag claims (the `spend` measure, and the teams
-- an `even` split without `teams:` shares among)
direct as (
    select
        month,
        currency,
        team,
        sum(cost) as spend
    from taken
    where position is null and team is not null
    group by all
),

-- GPU-hours each team's jobs held per month by the scheduler's records (GPUs allocated x run time, split
-- at month ends; a job still running counts to the bill's last hour), and the clusters they held them on:
-- the job's scheduler cluster, else the `cluster` tag of the billed resources its hosts map to
-- the `cluster` tags of the billed resources each job's hosts map to
job_resource_clusters as (
    select
        j.job_key,
        list(distinct lower(nullif(trim(r.tags['cluster']), ''))) as clusters
    from jobs_enriched as j, unnest(j.resource_ids) as u(resource_id)
    inner join resources as r on r.resource_id = u.resource_id
    group by j.job_key
),

job_spans as (
    select
        j.job_key,
        j.team,
        coalesce(j.gpus_requested, j.gpus_observed, 0) as gpus,
        j.started_at,
        coalesce(j.ended_at, (select max(hour) + interval 1 hour from cost_hourly)) as ended_at,
        list_filter(
            list_distinct([lower(j.cluster)] || coalesce(c.clusters, [])), lambda x: x is not null
        ) as clusters
    from jobs_enriched as j
    left join job_resource_clusters as c on c.job_key = j.job_key
    where j.team is not null and j.started_at is not null
),

job_hours as (
    select
        s.team,
        s.clusters,
        m.month,
        s.gpus * (
            epoch(least(s.ended_at, m.month + interval 1 month)) - epoch(greatest(s.started_at, m.month))
        ) / 3600.0 as gpu_hours
    from job_spans as s,
        unnest(range(date_trunc('month', s.started_at), s.ended_at, interval 1 month)) as m(month)
    where s.ended_at > s.started_at
),

-- each team's stored bytes per month: its buckets' (by the bucket's team tag on the bill), each bucket's
-- mean over the dates it was inventoried that month
bucket_days as (
    select
        date_trunc('month', inventory_date)::date as month,
        inventory_date,
        bucket,
        sum(bytes) as bytes
    from storage_prefix_days
    group by all
),

storage as (
    select
        b.month,
        r.team,
        sum(b.bytes) as bytes
    from (
        select
            month,
            bucket,
            avg(bytes) as bytes
        from bucket_days
        group by all
    ) as b
    inner join resources as r on r.resource_id in (b.bucket, 'arn:aws:s3:::' || b.bucket)
    where r.team is not null
    group by all
),

pools as (
    select
        position,
        month,
        week,
        currency,
        service_name as service,
        sum(cost) as cost
    from taken
    where position is not null
    group by all
),

pool_months as (
    select distinct
        position,
        month,
        currency
    from pools
),

-- each rule's weight per team for each month (and currency) it has a pool in
weights as (
    select
        pm.position,
        pm.month,
        pm.currency,
        w.team,
        w.weight
    from pool_months as pm
    inner join showback_rules as r on r.position = pm.position
    inner join (
        -- even: one each, among `teams:` or every team with direct cost that month and currency
        select r.position, pm.month, pm.currency, d.team, 1.0::double as weight
        from pool_months as pm
        inner join showback_rules as r on r.position = pm.position
        inner join (select distinct month, currency, team from direct) as d
            on d.month = pm.month and d.currency = pm.currency
        where r.split = 'even' and r.teams is null
        union all
        select r.position, pm.month, pm.currency, unnest(r.teams) as team, 1.0::double
        from pool_months as pm
        inner join showback_rules as r on r.position = pm.position
        where r.split = 'even' and r.teams is not null
        -- fixed: the percentages
        union all
        select r.position, pm.month, pm.currency, e.key, e.value::double
        from pool_months as pm
        inner join showback_rules as r on r.position = pm.position, unnest(map_entries(r.shares)) as s(e)
        where r.split = 'fixed'
        -- proportional: the measure
        union all
        select r.position, pm.month, pm.currency, d.team, d.spend::double
        from pool_months as pm
        inner join showback_rules as r on r.position = pm.position
        inner join direct as d on d.month = pm.month and d.currency = pm.currency
        where r.measure = 'spend'
        union all
        select r.position, pm.month, pm.currency, h.team, sum(h.gpu_hours)
        from pool_months as pm
        inner join showback_rules as r on r.position = pm.position
        inner join job_hours as h on h.month = pm.month::timestamp
        where
            r.measure = 'gpu_hours'
            or (r.measure = 'busy_gpu_hours' and len(list_filter(h.clusters, lambda c: c glob r.cluster)) > 0)
        group by all
        union all
        select r.position, pm.month, pm.currency, s.team, s.bytes::double
        from pool_months as pm
        inner join showback_rules as r on r.position = pm.position
        inner join storage as s on s.month = pm.month
        where r.measure = 'storage_bytes'
    ) as w on w.position = pm.position and w.month = pm.month and w.currency = pm.currency
    where
        w.weight > 0
        and (r.teams is null or list_contains(r.teams, w.team))
),

-- each team's cumulative share of its rule's pool, in team order: the last team's share ends at exactly 1
shares as (
    select
        position,
        month,
        currency,
        team,
        weight / total as share,
        coalesce(lag(upto) over ordered, 0) as upto_start,
        upto as upto_end
    from (
        select
            *,
            case
                when row_number() over ordered = count(*) over pool then 1.0
                else sum(weight) over ordered / total
            end as upto
        from (
            select
                *,
                sum(weight) over pool as total
            from (select position, month, currency, team, sum(weight) as weight from weights group by all)
            window pool as (partition by position, month, currency)
        )
        window
            pool as (partition by position, month, currency),
            ordered as (partition by position, month, currency order by team rows unbounded preceding)
    )
    window ordered as (partition by position, month, currency order by team)
),

allocated_rows as (
    select
        p.month,
        p.week,
        p.currency,
        s.team,
        null::varchar as project,
        case when s.team is null then 'unallocated' else 'allocated' end as kind,
        r.name as rule,
        r.split as method,
        r.measure,
        s.share,
        p.service,
        case
            when s.team is null then p.cost
            else (allocated(p.cost, s.upto_end) - allocated(p.cost, s.upto_start))::decimal(38, 12)
        end as cost
    from pools as p
    inner join showback_rules as r on r.position = p.position
    left join shares as s on s.position = p.position and s.month = p.month and s.currency = p.currency
),

cost_rows as (
    select
        month,
        week,
        currency,
        team,
        project,
        case when team is null then 'unallocated' else 'direct' end as kind,
        null::varchar as rule,
        null::varchar as method,
        null::varchar as measure,
        null::double as share,
        service_name as service,
        sum(cost)::decimal(38, 12) as cost
    from taken
    where position is null
    group by all
    union all
    select
        month,
        week,
        currency,
        team,
        project,
        kind,
        rule,
        method,
        measure,
        share,
        service,
        sum(cost)::decimal(38, 12) as cost
    from allocated_rows
    group by all
),

waste_rows as (
    select * from int_counted_waste
)

select
    *,
    0::decimal(18, 6) as waste,
    0 as findings
from cost_rows
union all
select
    month,
    week,
    currency,
    team,
    project,
    'waste' as kind,
    null as rule,
    null as method,
    null as measure,
    null as share,
    null as service,
    0::decimal(38, 12) as cost,
    waste,
    findings
from waste_rows
