-- GPU004 failed-job-and-zombie
-- depends_on: resources, gpu_billed_hours, gpu_job_hours, jobs_enriched, storage_checkpoints, gpu_claims
--             (marts only)
-- params: $window_start, $window_end, $min_zombie_hours, $loop_min_failures, $loop_window_hours,
--         $claim_thresholds
-- Three kinds of finding. A failed job (FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL,
-- DEADLINE): the cost of its GPU-slices in the window, only the part after its last checkpoint when one
-- is known (the job record's last_checkpoint_at, else the newest checkpoint of the job's run that
-- storage_checkpoints saw written while the job ran) (resource_id = the job's key). A crash loop: the
-- failed jobs of one name that failed at least loop_min_failures times within loop_window_hours with no
-- success between them, one finding for the name priced at the sum of its attempts' failed-job cost
-- (resource_id = 'crash-loop:' and the name's key); its attempts have no failed-job finding of their own.
-- A zombie instance: billed hours after the last job
-- on it ended, with no job running and no GPU telemetry at all, in stretches of at least
-- min_zombie_hours (followed 48 h past the window's edges, priced for the window's hours;
-- resource_id = the instance). Hours after a job with telemetry that shows idle GPUs are GPU001's, so
-- the two rules never price the same hour. Both the failed jobs' GPU-slices and the hours without telemetry
-- are this rule's claims in gpu_claims (it comes first). `priced_units` is what this rule puts a price on: a crash
-- loop only groups failed jobs' units, so it adds none.
with gpu_resources as (
    select *
    from resources
    where gpu_count > 0
),

billed as (
    select *
    from gpu_billed_hours
    where hour >= $window_start::timestamp - interval 48 hour
        and hour < $window_end::timestamp + interval 48 hour
),

claimed as (
    -- what gpu_claims gives this rule, 48 h either side of the window: the GPU-slices of failed jobs and the
    -- billed hours without telemetry (gpu_id NULL)
    select
        resource_id,
        hour,
        slice_start,
        gpu_id,
        job_key
    from gpu_claims
    where hour >= $window_start::timestamp - interval 48 hour
        and hour < $window_end::timestamp + interval 48 hour
        and claimed_by(claims, $claim_thresholds) = 'GPU004'
),

failed_records as (
    select *
    from jobs_enriched
    where job_failed(state)
        and (started_at is null or started_at < $window_end::timestamp)
        and (ended_at is null or ended_at > $window_start::timestamp)
),

written_checkpoints as (
    -- the newest checkpoint of the job's run written while the job ran (object storage inventories)
    select
        j.job_key,
        max(c.last_modified) as last_checkpoint_at
    from failed_records as j
    inner join storage_checkpoints as c
        on list_contains(c.run_job_ids, j.job_id)
        and c.last_modified >= j.started_at
        and c.last_modified <= coalesce(j.ended_at, 'infinity'::timestamp)
    where c.step is not null
    group by j.job_key
),

failed_jobs as (
    select
        j.* replace (coalesce(j.last_checkpoint_at, w.last_checkpoint_at) as last_checkpoint_at),
        case
            when j.last_checkpoint_at is not null then 'job record'
            when w.last_checkpoint_at is not null then 'storage inventory'
        end as checkpoint_source
    from failed_records as j
    left join written_checkpoints as w on w.job_key = j.job_key
),

failed_slices as (
    select
        s.*,
        -- the part of the slice after the job's last checkpoint (the whole slice when none is known)
        greatest(
            epoch(s.slice_end) - epoch(greatest(s.slice_start, coalesce(j.last_checkpoint_at, s.slice_start))), 0
        ) as lost_s
    from gpu_job_hours as s
    inner join failed_jobs as j on j.job_key = s.job_key
    inner join claimed as c
        on c.resource_id = s.resource_id and c.hour = s.hour and c.slice_start = s.slice_start
        and c.gpu_id = s.gpu_id and c.job_key = s.job_key
    where s.resource_id is not null
        and s.hour >= $window_start::timestamp and s.hour < $window_end::timestamp
    -- a GPU reported under two host names (node name and FQDN) is one GPU
    qualify row_number() over (partition by s.resource_id, s.gpu_id, s.slice_start order by s.host) = 1
),

failed_units as (
    select
        s.resource_id,
        s.hour,
        s.slice_start,
        s.slice_end,
        s.gpu_id,
        s.job_key,
        b.currency,
        s.slice_seconds / 3600 as gpu_hours,
        s.lost_s / 3600 as lost_gpu_hours,
        s.util_mean,
        s.util_samples,
        s.gpu_model,
        b.cost / greatest(r.gpu_count, coalesce(r.gpus_reporting, 0)) * s.lost_s / 3600 as cost
    from failed_slices as s
    inner join billed as b on b.resource_id = s.resource_id and b.hour = s.hour
    inner join gpu_resources as r on r.resource_id = s.resource_id
),

resource_jobs as (
    select
        u.resource_id,
        j.job_key,
        j.job_id,
        j.started_at,
        coalesce(j.ended_at, 'infinity'::timestamp) as ended_at
    from jobs_enriched as j, unnest(j.resource_ids) as u(resource_id)
    where j.started_at is not null
),

idle_billed as (
    -- billed hours with no telemetry at all and no job running in any part of them
    select b.*
    from billed as b
    where exists (
        select 1 from claimed as c where c.gpu_id is null and c.resource_id = b.resource_id and c.hour = b.hour
    )
        and not exists (
            select 1
            from resource_jobs as rj
            where rj.resource_id = b.resource_id
                and rj.started_at < b.hour + interval 1 hour
                and rj.ended_at > b.hour
        )
),

zombie_hours as (
    select
        i.resource_id,
        i.hour,
        i.cost,
        i.currency,
        max(rj.ended_at) as last_job_ended_at,
        arg_max(rj.job_id, rj.ended_at) as last_job_id
    from idle_billed as i
    inner join resource_jobs as rj on rj.resource_id = i.resource_id and rj.ended_at <= i.hour
    group by i.resource_id, i.hour, i.cost, i.currency
),

zombie_islands as (
    select
        *,
        hour - to_hours(row_number() over (partition by resource_id order by hour)) as island
    from zombie_hours
),

zombie_stretches as (
    select
        resource_id,
        island,
        min(hour) as stretch_start,
        max(hour) + interval 1 hour as stretch_end,
        count(*) as stretch_hours
    from zombie_islands
    group by resource_id, island
),

zombie_units as (
    select
        z.resource_id,
        z.hour,
        z.hour as slice_start,
        z.hour + interval 1 hour as slice_end,
        null::varchar as gpu_id,
        null::varchar as job_key,
        z.currency,
        z.cost,
        z.last_job_id,
        z.last_job_ended_at,
        s.island,
        s.stretch_start,
        s.stretch_end,
        s.stretch_hours
    from zombie_islands as z
    inner join zombie_stretches as s on s.resource_id = z.resource_id and s.island = z.island
    where s.stretch_hours >= $min_zombie_hours - 1e-9
        and z.hour >= $window_start::timestamp and z.hour < $window_end::timestamp
),

priced_units as (
    select resource_id, hour, slice_start, slice_end, gpu_id, job_key, currency, cost from failed_units
    where cost > 0
    union all
    select resource_id, hour, slice_start, slice_end, gpu_id, job_key, currency, cost from zombie_units
),

failed_waste as (
    select
        u.job_key,
        mode(u.currency) as currency,
        count(distinct u.gpu_id) as gpus,
        sum(u.gpu_hours) as gpu_hours,
        sum(u.lost_gpu_hours) as lost_gpu_hours,
        sum(u.util_mean * u.util_samples) / nullif(sum(u.util_samples), 0) as util_mean,
        any_value(u.gpu_model) as gpu_model,
        list(distinct u.resource_id) as resource_ids
    from failed_units as u
    group by u.job_key
),

loop_events as (
    -- the ends of named jobs a crash loop is counted from: failures (not CANCELLED: a person stopped the
    -- job) and successes, from loop_window_hours before the window to its end. The name: Slurm JobName and
    -- jobs_csv job_name as written; a Kubernetes pod's Job (its owner, else its job-name label, else the
    -- pod name without the generated suffixes of a Job, indexed Job or ReplicaSet), a CronJob's runs under
    -- the CronJob's name (its Jobs are `<cronjob>-<scheduled minute>`)
    select
        j.*,
        concat_ws('/', j.scheduler, j.cluster, j.account, j.user, j.loop_name) as loop_key,
        j.state <> 'COMPLETED' as is_failure
    from (
        select
            *,
            case when scheduler = 'kubernetes'
                then regexp_replace(
                    coalesce(
                        case when tags['controller_kind'] = 'Job' then nullif(trim(tags['controller_name']), '') end,
                        nullif(trim(tags['job-name']), ''),
                        nullif(trim(tags['batch.kubernetes.io/job-name']), ''),
                        regexp_replace(
                            trim(job_name),
                            '(-[0-9]+|-[bcdfghjklmnpqrstvwxz2456789]{6,10})?-[bcdfghjklmnpqrstvwxz2456789]{5}$',
                            ''
                        )
                    ),
                    '-[0-9]{8,}$', ''
                )
                else trim(job_name)
            end as loop_name,
            coalesce(ended_at, started_at, submitted_at) as event_at
        from jobs_enriched
        where state in ('COMPLETED', 'FAILED', 'TIMEOUT', 'OUT_OF_MEMORY', 'NODE_FAIL', 'BOOT_FAIL', 'DEADLINE')
            and nullif(trim(job_name), '') is not null
    ) as j
    where j.event_at >= $window_start::timestamp - to_seconds(($loop_window_hours * 3600)::bigint)
        and j.event_at < $window_end::timestamp
),

loop_streaks as (
    -- a success of the name ends a streak: the failures before and after it are not one loop (at the
    -- same instant the failure counts first)
    select
        *,
        sum(case when is_failure then 0 else 1 end) over (
            partition by loop_key order by event_at, is_failure desc
            rows between unbounded preceding and current row
        ) as streak
    from loop_events
),

loop_failures as (
    select * from loop_streaks where is_failure
),

loop_windows as (
    -- each failure (anchor) with the failures of its name and streak in the loop_window_hours up to it
    select
        a.job_key as anchor,
        m.job_key
    from loop_failures as a
    inner join loop_failures as m
        on m.loop_key = a.loop_key
        and m.streak = a.streak
        and m.event_at <= a.event_at
        and epoch(a.event_at) - epoch(m.event_at) <= $loop_window_hours * 3600
),

loop_members as (
    -- the failures inside some window holding at least loop_min_failures of them
    select distinct w.job_key
    from loop_windows as w
    where w.anchor in (
        select anchor from loop_windows group by anchor having count(*) >= $loop_min_failures
    )
),

job_costs as (
    select
        job_key,
        currency,
        sum(cost) as cost
    from failed_units
    group by job_key, currency
),

loop_attempts as (
    select
        f.*,
        w.currency as job_currency,
        w.gpus,
        w.gpu_model,
        coalesce(w.gpu_hours, 0) as week_gpu_hours,
        coalesce(w.lost_gpu_hours, 0) as week_lost_gpu_hours
    from loop_failures as f
    inner join loop_members as m on m.job_key = f.job_key
    left join failed_waste as w on w.job_key = f.job_key
),

loop_waste as (
    select
        loop_key,
        any_value(loop_name) as loop_name,
        any_value(scheduler) as scheduler,
        any_value(user) as user,
        count(*) as attempts,
        min(event_at) as first_failed_at,
        max(event_at) as last_failed_at,
        arg_max(job_id, event_at) as last_job_id,
        mode(job_currency) as currency,
        mode(team) as team,
        mode(project) as project,
        mode(provider) as provider,
        mode(account_id) as account_id,
        mode(region_id) as region_id,
        mode(team_source) as team_source,
        max(gpus) as gpus,
        mode(gpu_model) as gpu_model,
        sum(week_gpu_hours) as gpu_hours,
        sum(week_lost_gpu_hours) as lost_gpu_hours,
        count(*) filter (where week_gpu_hours > 0) as attempts_in_week,
        -- what every attempt shares
        case when count(distinct state) = 1 then any_value(state) end as shared_state,
        case when count(distinct exit_code) = 1 and count(exit_code) = count(*)
                and any_value(exit_code) not in ('0', '0:0')
            then any_value(exit_code) end as shared_exit_code,
        quantile_cont(runtime_s, 0.5) as runtime_median_s,
        count(runtime_s) = count(*)
            and max(runtime_s) - min(runtime_s)
                <= greatest(0.1 * quantile_cont(runtime_s, 0.5), 120) as similar_runtime,
        list(job_id order by event_at) as job_ids,
        list({
            'job_id': job_id,
            'job_key': job_key,
            'started_at': strftime(started_at, '%Y-%m-%dT%H:%M:%SZ'),
            'ended_at': strftime(ended_at, '%Y-%m-%dT%H:%M:%SZ'),
            'state': state,
            'state_raw': state_raw,
            'exit_code': exit_code,
            'hosts': hosts,
            'runtime_hours': round(runtime_s / 3600, 4),
            'lost_gpu_hours': round(week_lost_gpu_hours, 4),
            'cost': round(coalesce(
                (select sum(c.cost) from job_costs as c where c.job_key = loop_attempts.job_key), 0), 2),
            'in_week': event_at >= $window_start::timestamp
        } order by event_at) as attempt_list
    from loop_attempts
    group by loop_key
),

loop_bursts as (
    -- stretches of a loop's failures less than loop_window_hours apart
    select
        loop_key,
        count(*) filter (where gap_s is null or gap_s > $loop_window_hours * 3600) as bursts
    from (
        select
            loop_key,
            epoch(event_at) - epoch(lag(event_at) over (partition by loop_key order by event_at)) as gap_s
        from loop_attempts
    )
    group by loop_key
),

loop_host_counts as (
    select
        a.loop_key,
        h.host,
        count(distinct a.job_key) as attempts
    from loop_attempts as a, unnest(coalesce(a.hosts, a.resource_ids)) as h(host)
    group by a.loop_key, h.host
),

loop_shared_hosts as (
    -- the hosts every attempt of the loop ran on
    select
        c.loop_key,
        list(c.host order by c.host) as hosts
    from loop_host_counts as c
    inner join loop_waste as w on w.loop_key = c.loop_key and c.attempts = w.attempts
    group by c.loop_key
),

loop_causes as (
    select
        w.*,
        b.bursts,
        h.hosts as shared_hosts,
        (
            select sum(c.cost)
            from loop_attempts as a
            inner join job_costs as c on c.job_key = a.job_key
            where a.loop_key = w.loop_key and c.currency = w.currency
        ) as waste,
        case when w.runtime_median_s >= 3600 then printf('%.1f h', w.runtime_median_s / 3600)
            when w.runtime_median_s >= 60 then printf('%.0f min', w.runtime_median_s / 60)
            else printf('%.0f s', coalesce(w.runtime_median_s, 0))
        end as runtime_text,
        case w.shared_state
            when 'OUT_OF_MEMORY' then 'each ran out of memory'
            when 'TIMEOUT' then 'each hit its time limit'
            when 'NODE_FAIL' then 'each lost its node'
            when 'BOOT_FAIL' then 'each failed to boot'
            when 'DEADLINE' then 'each missed its deadline'
        end as state_text
    from loop_waste as w
    inner join loop_bursts as b on b.loop_key = w.loop_key
    left join loop_shared_hosts as h on h.loop_key = w.loop_key
),

loop_findings as (
    select
        'crash-loop:' || l.loop_key as resource_id,
        -- what a finding about a job name calls it (pipelines/catalog/scheduler_names.csv)
        coalesce(
            (select n.job_name_type from scheduler_names as n where n.scheduler = l.scheduler),
            (select n.job_name_type from scheduler_names as n where n.scheduler = '*')
        ) as resource_type,
        l.provider,
        l.account_id,
        l.region_id,
        l.team,
        l.project,
        l.user as owner,
        l.last_job_id as job_id,
        l.currency,
        l.waste,
        printf(
            'Job name %s%s failed %d times in %s%s (jobs %s): %d of its attempts this week on %s×%s lost %s, '
            || 'costing %s %.2f. Likeliest shared cause: %s.',
            l.loop_name, coalesce(' (user ' || l.user || ')', ''), l.attempts,
            case when epoch(l.last_failed_at) - epoch(l.first_failed_at) >= 3600
                then printf('%.1f hours', (epoch(l.last_failed_at) - epoch(l.first_failed_at)) / 3600)
                else printf('%.0f minutes', (epoch(l.last_failed_at) - epoch(l.first_failed_at)) / 60) end,
            case when l.bursts > 1 then printf(' (%d bursts of ≥%d within %s h)', l.bursts, $loop_min_failures,
                printf('%g', $loop_window_hours::double)) else '' end,
            array_to_string(l.job_ids[1:5], ', ')
                || case when l.attempts > 5 then printf(' and %d more', l.attempts - 5) else '' end,
            l.attempts_in_week, coalesce(l.gpus::varchar, '?'),
            regexp_replace(coalesce(l.gpu_model, 'GPU'), '^NVIDIA\s+', ''),
            case when l.lost_gpu_hours >= 1 then printf('%.4g GPU-hours', l.lost_gpu_hours)
                else printf('%.1f GPU-minutes', l.lost_gpu_hours * 60) end,
            l.currency, l.waste,
            coalesce(
                nullif(concat_ws(', ',
                    case
                        when l.state_text is not null and l.similar_runtime
                            then l.state_text || ' about ' || l.runtime_text || ' into the run'
                        when l.state_text is not null then l.state_text
                        when l.similar_runtime then 'each failed about ' || l.runtime_text || ' into the run'
                    end,
                    case when l.shared_hosts is not null then 'all on ' || array_to_string(l.shared_hosts, ', ') end,
                    case when l.shared_exit_code is not null then 'exit code ' || l.shared_exit_code || ' every time' end
                ), ''),
                'none visible (the attempts differ in exit code, host and time into the run)'
            )
        ) as reason,
        json_object(
            'kind', 'crash_loop',
            'job_name', l.loop_name,
            'user', l.user,
            'scheduler', l.scheduler,
            'attempts', l.attempts,
            'attempts_in_week', l.attempts_in_week,
            'bursts', l.bursts,
            'first_failed_at', strftime(l.first_failed_at, '%Y-%m-%dT%H:%M:%SZ'),
            'last_failed_at', strftime(l.last_failed_at, '%Y-%m-%dT%H:%M:%SZ'),
            'hours', round((epoch(l.last_failed_at) - epoch(l.first_failed_at)) / 3600, 4),
            'likely_cause', case
                when l.state_text is not null then lower(l.shared_state)
                when l.similar_runtime then 'same_point_in_run'
                when l.shared_hosts is not null then 'same_host'
                when l.shared_exit_code is not null then 'same_exit_code'
            end,
            'shared', json_object(
                'state', l.shared_state,
                'exit_code', l.shared_exit_code,
                'hosts', l.shared_hosts,
                'runtime_hours', case when l.similar_runtime then round(l.runtime_median_s / 3600, 4) end
            ),
            'gpu_hours', round(l.gpu_hours, 4),
            'lost_gpu_hours', round(l.lost_gpu_hours, 4),
            'attempt_list', l.attempt_list[-50:],  -- the latest 50
            'team_source', l.team_source
        ) as evidence,
        'cost_hourly ÷ GPUs × the GPU-hours of the failed attempts in the week (each after its last checkpoint '
        || 'when known)' as waste_basis
    from loop_causes as l
),

failed_findings as (
    select
        j.job_key as resource_id,
        -- what a finding about one job calls it (pipelines/catalog/scheduler_names.csv)
        coalesce(
            (select n.job_type from scheduler_names as n where n.scheduler = j.scheduler),
            (select n.job_type from scheduler_names as n where n.scheduler = '*')
        ) as resource_type,
        j.provider,
        j.account_id,
        j.region_id,
        j.team,
        j.project,
        j.user as owner,
        j.job_id,
        w.currency,
        (select sum(u.cost) from failed_units as u where u.job_key = w.job_key and u.currency = w.currency)
            as waste,
        printf(
            'Job %s%s %s%s after %s on %s: %d×%s at %.1f%% mean util for %s%s bought no result, '
            || 'costing %s %.2f.',
            j.job_id, coalesce(' (' || j.job_name || ')', ''),
            case j.state
                when 'CANCELLED' then 'was cancelled'
                when 'TIMEOUT' then 'hit its time limit'
                when 'OUT_OF_MEMORY' then 'ran out of memory'
                when 'NODE_FAIL' then 'lost its node'
                else 'failed'
            end,
            case when j.state_raw is not null and lower(j.state_raw) <> lower(j.state)
                then ' (' || j.state_raw || ')' else '' end,
            case
                when j.runtime_s >= 3600 then printf('%.1f h', j.runtime_s / 3600)
                when j.runtime_s >= 60 then printf('%.0f min', j.runtime_s / 60)
                else printf('%.0f s', coalesce(j.runtime_s, 0))
            end,
            coalesce(array_to_string(j.hosts, ', '), array_to_string(w.resource_ids, ', ')),
            w.gpus, regexp_replace(coalesce(w.gpu_model, 'GPU'), '^NVIDIA\s+', ''), coalesce(w.util_mean, 0),
            (case when w.gpu_hours >= 1 then printf('%.4g GPU-hours', w.gpu_hours)
                else printf('%.1f GPU-minutes', w.gpu_hours * 60) end)
            -- GPU-hours priced by a `pricing:` cost model are named so (a bill's are plain GPU-hours)
            || (select case string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis)
            when 'owned' then ' (modelled hours, owned)'
            when 'contract' then ' (contract hours)'
            when 'bill' then ''
            else coalesce(' (' || string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis) || ' hours)', '')
        end from resources as r where list_contains(w.resource_ids, r.resource_id)),
            case when j.last_checkpoint_at is not null
                then printf('; the %s since its last checkpoint at %s UTC',
                    case when w.lost_gpu_hours >= 1 then printf('%.4g GPU-hours', w.lost_gpu_hours)
                        else printf('%.1f GPU-minutes', w.lost_gpu_hours * 60) end,
                    strftime(j.last_checkpoint_at, '%Y-%m-%d %H:%M'))
                else '' end,
            w.currency,
            (select sum(u.cost) from failed_units as u where u.job_key = w.job_key and u.currency = w.currency)
        ) as reason,
        json_object(
            'kind', 'failed_job',
            'job_id', j.job_id,
            'job_name', j.job_name,
            'user', j.user,
            'state', j.state,
            'state_raw', j.state_raw,
            'exit_code', j.exit_code,
            'started_at', strftime(j.started_at, '%Y-%m-%dT%H:%M:%SZ'),
            'ended_at', strftime(j.ended_at, '%Y-%m-%dT%H:%M:%SZ'),
            'runtime_hours', round(j.runtime_s / 3600, 4),
            'last_checkpoint_at', strftime(j.last_checkpoint_at, '%Y-%m-%dT%H:%M:%SZ'),
            'checkpoint_source', j.checkpoint_source,
            'hosts', j.hosts,
            'resource_ids', w.resource_ids,
            'gpus', w.gpus,
            'util_mean_pct', round(w.util_mean, 2),
            'gpu_hours', round(w.gpu_hours, 4),
            'lost_gpu_hours', round(w.lost_gpu_hours, 4),
            'team_source', j.team_source
        ) as evidence,
        'cost_hourly ÷ GPUs × the GPU-hours of the failed job in the week (after its last checkpoint when '
        || 'known)' as waste_basis
    from failed_waste as w
    inner join failed_jobs as j on j.job_key = w.job_key
    -- an attempt of a crash loop is priced in the loop's finding
    where not exists (select 1 from loop_members as m where m.job_key = w.job_key)
),

zombie_waste as (
    select
        resource_id,
        any_value(currency) as currency,
        sum(cost) as waste,
        count(*) as zombie_hours,
        count(distinct island) as stretches_count,
        max(stretch_hours) as longest_stretch_hours,
        arg_min(last_job_id, hour) as last_job_id,
        min(last_job_ended_at) as last_job_ended_at,
        list_sort(list(distinct {'start': strftime(stretch_start, '%Y-%m-%dT%H:%M:%SZ'),
                                 'end': strftime(stretch_end, '%Y-%m-%dT%H:%M:%SZ'),
                                 'hours': stretch_hours,
                                 'after_job': last_job_id})) as stretches
    from zombie_units
    group by resource_id
),

zombie_findings as (
    select
        r.resource_id,
        coalesce(r.resource_type, 'GPU instance') as resource_type,
        r.provider,
        r.account_id,
        r.region_id,
        r.team,
        r.project,
        r.owner,
        z.last_job_id as job_id,
        z.currency,
        z.waste,
        printf(
            '%s %s (%s, %d×%s) %s with no job running and no GPU telemetry after job %s '
            || 'ended (%s UTC), in %d stretch(es) of ≥%s h, costing %s %.2f.',
            coalesce(
                r.instance_type, case when r.pricing_basis in ('owned', 'contract') then 'GPU host' end, 'GPU instance'
            ),
            r.resource_id, coalesce(r.host, 'no host'), r.gpu_count,
            coalesce(r.gpu_model, 'GPU'),
            case r.pricing_basis
                when 'owned' then printf('ran up %d modelled hours (owned)', z.zombie_hours)
                when 'contract' then printf('ran up %d contract hours', z.zombie_hours)
                else printf('was billed %d hours', z.zombie_hours)
            end,
            z.last_job_id,
            strftime(z.last_job_ended_at, '%Y-%m-%d %H:%M'), z.stretches_count,
            printf('%g', $min_zombie_hours::double), z.currency, z.waste
        ) as reason,
        json_object(
            'kind', 'zombie',
            'instance_type', r.instance_type,
            'host', r.host,
            'gpu_count', r.gpu_count,
            'zombie_hours', z.zombie_hours,
            'zombie_stretches', z.stretches_count,
            'longest_stretch_hours', z.longest_stretch_hours,
            'last_job_id', z.last_job_id,
            'last_job_ended_at', strftime(z.last_job_ended_at, '%Y-%m-%dT%H:%M:%SZ'),
            'stretches', z.stretches[1:20]
        ) as evidence,
        printf(
            'effective cost (cost_hourly) of billed hours after the last job ended, with no job and no GPU '
            || 'telemetry, in stretches of at least %s hours', printf('%g', $min_zombie_hours::double)
        ) as waste_basis
    from zombie_waste as z
    inner join gpu_resources as r on r.resource_id = z.resource_id
),

findings as (
    select * from failed_findings
    union all by name
    select * from zombie_findings
    union all by name
    select * from loop_findings
)

select
    resource_id,
    resource_type,
    provider,
    account_id,
    region_id,
    team,
    project,
    owner,
    job_id,
    'waste' as status,
    reason,
    evidence,
    waste::decimal(18, 6) as estimated_waste,
    currency,
    waste_basis
from findings
where waste > 0
order by estimated_waste desc, resource_id
