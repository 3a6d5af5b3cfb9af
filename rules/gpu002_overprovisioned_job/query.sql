-- GPU002 overprovisioned-job
-- depends_on: resources, gpu_billed_hours, gpu_job_hours, gpu_job_spans, jobs_enriched, gpu_claims (marts only)
-- params: $window_start, $window_end, $min_runtime_minutes, $unused_util_pct, $max_peak_util_pct,
--         $mig_headroom_pct, $smaller_gpu_max_peak_util_pct, $smaller_gpu_headroom_pct, $smaller_gpus,
--         $gpu_peak_tflops, $claim_thresholds
-- A job is judged on all its GPU-slices (the whole job, also outside the window); only its slices in
-- the window that gpu_claims gives this rule are priced (its claim: a GPU of a job that ran at least
-- min_runtime_minutes, unused or with p95 util <= max_peak_util_pct; never a failed job's slice, GPU004's,
-- nor a part of an hour in which every GPU of the instance idled, GPU001's). Per GPU of the job, one of: unused (mean util over the job <= unused_util_pct) -> its
-- whole cost; else, when every used GPU's p95 util <= max_peak_util_pct and a MIG slice of its model
-- holds the peak memory and p95 util with mig_headroom_pct to spare -> the share of its cost the slice
-- does not need ((7 - slices) / 7); else, when a smaller GPU of $smaller_gpus holds the peak memory and
-- the p95 util scaled by the two GPUs' peak TFLOP/s with smaller_gpu_headroom_pct to spare -> its cost
-- minus the smaller GPU's price for the same hours (never below 0), the smaller GPU priced at its list
-- price, or at its measured effective price in the window when that is higher (or when no list price is
-- in the job's currency); measured only from full billed hours of instances with at least as many GPUs
-- as the job's (a 1-GPU size, a spot hour or a partial first/last hour never lowers the price).
-- `priced_units` is what this rule puts a price on.
with gpu_resources as (
    select *
    from resources
    where gpu_count > 0
),

billed as (
    select *
    from gpu_billed_hours
    where hour >= $window_start::timestamp and hour < $window_end::timestamp
),

candidates as (
    -- jobs that did not fail (gpu_job_spans holds none: a failed job's GPU-hours are GPU004's) and ran in
    -- the window (judged on all their slices, priced in the window)
    select j.*
    from jobs_enriched as j
    inner join gpu_job_spans as sp on sp.job_key = j.job_key
    where (j.started_at is null or j.started_at < $window_end::timestamp)
        and (j.ended_at is null or j.ended_at > $window_start::timestamp)
),

job_slices as (
    -- a GPU reported under two host names (node name and FQDN) is one GPU
    select s.*
    from gpu_job_hours as s
    inner join candidates as j on j.job_key = s.job_key
    where s.resource_id is not null
    qualify row_number() over (partition by s.resource_id, s.gpu_id, s.slice_start order by s.host) = 1
),

per_gpu as (
    select
        job_key,
        resource_id,
        gpu_id,
        any_value(gpu_index) as gpu_index,
        any_value(gpu_model) as gpu_model,
        sum(util_sum) / nullif(sum(util_samples), 0) as util_mean,
        max(util_p95) as util_p95,
        max(mem_used_max_mib) as mem_max_mib,
        max(mem_total_mib) as mem_total_mib
    from job_slices
    group by job_key, resource_id, gpu_id
),

per_job as (
    select
        g.job_key,
        count(*) as gpus,
        count(*) filter (where g.util_mean <= $unused_util_pct) as unused_gpus,
        count(*) filter (where g.util_mean > $unused_util_pct) as used_gpus,
        max(g.util_mean) filter (where g.util_mean <= $unused_util_pct) as unused_util_max,
        avg(g.util_mean) filter (where g.util_mean > $unused_util_pct) as used_util_mean,
        max(g.util_p95) filter (where g.util_mean > $unused_util_pct) as used_util_p95,
        max(g.mem_max_mib) filter (where g.util_mean > $unused_util_pct) as used_mem_max_mib,
        min(g.mem_total_mib) filter (where g.util_mean > $unused_util_pct) as used_mem_total_mib,
        any_value(g.gpu_model) as gpu_model,
        list(g.gpu_index order by g.gpu_index) filter (where g.util_mean <= $unused_util_pct) as unused_indices,
        list(distinct g.resource_id) as resource_ids,
        bool_and(regexp_matches(coalesce(g.gpu_model, ''), '(A100|A800|H100|H800|H20|GH200|B100|B200)'))
            as mig_capable
    from per_gpu as g
    where g.util_mean is not null
    group by g.job_key
),

fitted as (
    select
        *,
        -- MIG profiles of a 7-slice GPU: 1g, 2g, 3g, 4g, 7g use 1, 2, 4, 4, 8 eighths of its memory
        greatest(ceil(7 * least(used_util_p95 * (1 + $mig_headroom_pct / 100), 100) / 100), 1) as compute_need,
        greatest(ceil(8 * used_mem_max_mib * (1 + $mig_headroom_pct / 100) / nullif(used_mem_total_mib, 0)), 1)
            as memory_need
    from per_job
),

sized as (
    select
        *,
        case
            when not mig_capable or used_gpus = 0 or used_util_p95 is null or used_mem_max_mib is null
                or used_util_p95 > $max_peak_util_pct then 7
            when compute_need <= 1 and memory_need <= 1 then 1
            when compute_need <= 2 and memory_need <= 2 then 2
            when compute_need <= 3 and memory_need <= 4 then 3
            when compute_need <= 4 and memory_need <= 4 then 4
            else 7
        end as mig_slices
    from fitted
),

profiled as (
    select
        *,
        case when mig_slices < 7 then printf(
            '%dg.%dgb', mig_slices,
            ceil(used_mem_total_mib / 1024 * case mig_slices when 1 then 1 when 2 then 2 else 4 end / 8)::bigint
        ) end as mig_profile
    from sized
),

smaller_catalogue as (
    -- the GPUs a job may move to ($smaller_gpus; typed, so an empty list is an empty table)
    select
        unnest(
            $smaller_gpus::struct(
                gpu_model varchar, gpu_memory_gib double, price_per_gpu_hour double, currency varchar,
                provider varchar, price_note varchar
            )[],
            recursive := true
        )
),

peak_catalogue as (
    select
        unnest(
            $gpu_peak_tflops::struct(gpu_model varchar, aliases varchar[], peak_tflops double)[],
            recursive := true
        )
),

peak_names as (
    -- every model name and alias, normalised like a telemetry name ('NVIDIA H100 80GB HBM3' -> h100-80gb-hbm3)
    select
        gpu_model,
        peak_tflops,
        regexp_replace(regexp_replace(lower(trim(alias)), '^(nvidia|tesla)[ _-]+', ''), '[ _]+', '-', 'g')
            as name
    from (select gpu_model, peak_tflops, unnest(list_append(aliases, gpu_model)) as alias from peak_catalogue)
),

job_resources as (
    -- the cloud and currency of the job's instances, and the GPU model / memory their bill names
    select
        g.job_key,
        mode(r.provider) as provider,
        mode(r.currency) as currency,
        any_value(r.gpu_model) as gpu_model,
        min(r.gpu_memory_gib) as gpu_memory_gib,
        max(r.gpu_count) as gpu_count
    from per_gpu as g
    inner join gpu_resources as r on r.resource_id = g.resource_id
    group by g.job_key
),

job_gpu as (
    -- the job's GPU: its peak TFLOP/s (the longest catalogue name its model name is, or starts with
    -- followed by '-': h100-80gb-hbm3 -> h100; the telemetry's name, else the bill's) and its memory
    -- (telemetry, else the bill's; nvidia_smi_dmon reports no memory total)
    select
        k.job_key,
        k.provider,
        k.currency,
        k.gpu_count,
        k.bill_gpu_model,
        k.mem_total_mib,
        k.mem_total_source,
        n.gpu_model as peak_model,
        n.peak_tflops
    from (
        select
            p.job_key,
            jr.provider,
            jr.currency,
            jr.gpu_count,
            jr.gpu_model as bill_gpu_model,
            coalesce(p.used_mem_total_mib, jr.gpu_memory_gib * 1024) as mem_total_mib,
            case
                when p.used_mem_total_mib is not null then 'telemetry'
                when jr.gpu_memory_gib is not null then 'bill'
            end as mem_total_source,
            regexp_replace(
                regexp_replace(lower(trim(coalesce(p.gpu_model, jr.gpu_model))), '^(nvidia|tesla)[ _-]+', ''),
                '[ _]+', '-', 'g'
            ) as model_key
        from profiled as p
        inner join job_resources as jr on jr.job_key = p.job_key
    ) as k
    left join peak_names as n on k.model_key = n.name or starts_with(k.model_key, n.name || '-')
    qualify row_number() over (partition by k.job_key order by length(n.name) desc nulls last) = 1
),

smaller_peaks as (
    -- the peak TFLOP/s of each smaller GPU (its model, normalised like a telemetry name: 'NVIDIA L4' -> l4,
    -- is a name of peak_names)
    select
        s.*,
        n.peak_tflops,
        n.name as model_key
    from smaller_catalogue as s
    inner join peak_names as n
        on n.name = regexp_replace(
            regexp_replace(lower(trim(s.gpu_model)), '^(nvidia|tesla)[ _-]+', ''), '[ _]+', '-', 'g'
        )
    qualify row_number() over (
        partition by s.gpu_model, s.gpu_memory_gib, s.provider, s.currency order by n.peak_tflops
    ) = 1
),

measured_hours as (
    -- what the bill says a GPU-hour of each model costs, per full billed resource-hour in the window
    select
        regexp_replace(
            regexp_replace(lower(trim(r.gpu_model)), '^(nvidia|tesla)[ _-]+', ''), '[ _]+', '-', 'g'
        ) as model_key,
        r.gpu_memory_gib,
        lower(r.provider) as provider,
        b.currency,
        r.gpu_count,
        b.cost / r.gpu_count as price
    from billed as b
    inner join gpu_resources as r on r.resource_id = b.resource_id
    where b.full_hour and r.gpu_model is not null and r.gpu_memory_gib is not null
),

job_sizes as (
    -- the clouds, currencies and instance sizes (GPUs) of the jobs: a handful, whatever the jobs
    select distinct
        lower(provider) as provider,
        currency,
        gpu_count
    from job_gpu
),

measured_prices as (
    -- per job size and smaller GPU: the median effective cost per GPU-hour of the full billed hours of
    -- that model (and memory) on instances with at least as many GPUs as the job's, same cloud and currency
    select
        z.provider as job_provider,
        z.currency as job_currency,
        z.gpu_count as job_gpu_count,
        s.gpu_model,
        s.gpu_memory_gib,
        s.provider,
        s.currency,
        median(h.price) as price,
        sum(h.gpu_count) as gpu_hours
    from job_sizes as z
    inner join smaller_peaks as s on lower(s.provider) = z.provider
    inner join measured_hours as h
        on h.model_key = s.model_key
        and abs(h.gpu_memory_gib - s.gpu_memory_gib) < 1
        and h.provider = z.provider
        and h.currency = z.currency
        and h.gpu_count >= z.gpu_count
    group by all
),

smaller_fits as (
    -- when no MIG slice fits: the cheapest smaller GPU on the same cloud that holds the job's peak
    -- memory and its p95 util scaled by peak TFLOP/s, each with smaller_gpu_headroom_pct to spare; priced
    -- at greatest(measured, list) when its list price is in the job's currency (a lower measured price may
    -- be a discount or a spot rate the job could not buy), else at the measured price
    select
        o.*,
        case
            when o.list_price is not null and o.measured_price is not null
                then greatest(o.measured_price, o.list_price)
            else coalesce(o.measured_price, o.list_price)
        end as price,
        case
            when o.measured_price is not null and o.measured_price >= coalesce(o.list_price, 0) then 'measured'
            else 'list'
        end as price_kind,
        case
            when o.measured_price is not null and o.measured_price >= coalesce(o.list_price, 0) then printf(
                'measured: median effective cost per GPU-hour of %s billed %s GPU-hours this week, '
                || 'full hours of instances with %d or more GPUs%s',
                printf('%,d', round(o.measured_gpu_hours)::bigint), o.gpu_model, o.job_gpu_count,
                case when o.list_price is not null then ', not below its list price' else '' end
            )
            when o.measured_price is not null then printf(
                '%s; not the lower %.2f measured on the bill',
                coalesce(nullif(o.list_note, ''), 'list price'), o.measured_price
            )
            else coalesce(nullif(o.list_note, ''), 'list price')
        end as price_note
    from (
        select
            p.job_key,
            s.gpu_model,
            s.gpu_memory_gib,
            s.peak_tflops,
            j.peak_tflops as job_peak_tflops,
            j.currency,
            j.gpu_count as job_gpu_count,
            j.mem_total_mib as job_mem_total_mib,
            m.price as measured_price,
            m.gpu_hours as measured_gpu_hours,
            case when upper(s.currency) = upper(j.currency) then s.price_per_gpu_hour end as list_price,
            s.price_note as list_note,
            p.used_util_p95 * j.peak_tflops / s.peak_tflops as projected_p95
        from profiled as p
        inner join job_gpu as j on j.job_key = p.job_key
        inner join smaller_peaks as s on lower(s.provider) = lower(j.provider)
        left join measured_prices as m
            on m.job_provider = lower(j.provider)
            and m.job_currency = j.currency
            and m.job_gpu_count = j.gpu_count
            and m.gpu_model = s.gpu_model
            and m.gpu_memory_gib = s.gpu_memory_gib
            and m.provider = s.provider
            and m.currency = s.currency
        where p.mig_slices = 7
            and p.used_gpus > 0
            and p.used_util_p95 <= least($max_peak_util_pct, $smaller_gpu_max_peak_util_pct)
            and p.used_mem_max_mib is not null
            and j.peak_tflops is not null
            and j.mem_total_mib is not null
            -- a list price in the job's currency, else a measured one (and then no entry of the same GPU
            -- has a list price in the job's currency, which would bound the measured price from below)
            and (
                upper(s.currency) = upper(j.currency)
                or (
                    m.price is not null
                    and not exists (
                        select 1
                        from smaller_peaks as s2
                        where s2.model_key = s.model_key
                            and abs(s2.gpu_memory_gib - s.gpu_memory_gib) < 1
                            and lower(s2.provider) = lower(s.provider)
                            and upper(s2.currency) = upper(j.currency)
                    )
                )
            )
            -- smaller: not more compute nor memory, and less compute or at least 10 % less memory
            and s.peak_tflops <= j.peak_tflops
            and s.gpu_memory_gib * 1024 <= j.mem_total_mib * 1.05
            and (s.peak_tflops < j.peak_tflops or s.gpu_memory_gib * 1024 < j.mem_total_mib * 0.9)
            -- fits: memory read as 10^9 bytes (the smaller reading of the provider's figure), and the
            -- p95 util scaled by the peak TFLOP/s, both with headroom
            and s.gpu_memory_gib * 1e9 / 1048576 >= p.used_mem_max_mib * (1 + $smaller_gpu_headroom_pct / 100)
            and p.used_util_p95 * j.peak_tflops / s.peak_tflops * (1 + $smaller_gpu_headroom_pct / 100) <= 100
    ) as o
    qualify row_number() over (
        partition by o.job_key order by price, o.gpu_model, o.gpu_memory_gib
    ) = 1
),

claims as (
    -- the GPU-slices of the window this rule claims (gpu_claims: failed jobs are GPU004's, parts of hours
    -- in which every GPU of the instance idled GPU001's)
    select
        resource_id,
        hour,
        slice_start,
        gpu_id,
        job_key
    from gpu_claims
    where hour >= $window_start::timestamp and hour < $window_end::timestamp
        and claimed_by(claims, $claim_thresholds) = 'GPU002'
),

job_units as (
    -- every slice of the job's GPUs this rule could price, with the cost the bill gives it
    select
        s.resource_id,
        s.hour,
        s.slice_start,
        s.slice_end,
        s.gpu_id,
        s.job_key,
        b.currency,
        case
            when g.util_mean <= $unused_util_pct then 'unused'
            when p.mig_slices < 7 then 'mig_fit'
            else 'smaller_gpu'
        end as kind,
        p.mig_slices,
        f.price as smaller_price,
        f.currency as smaller_currency,
        s.slice_seconds / 3600 as gpu_hours,
        b.cost / greatest(r.gpu_count, coalesce(r.gpus_reporting, 0)) * s.slice_seconds / 3600 as billed_cost
    from job_slices as s
    inner join per_gpu as g on g.job_key = s.job_key and g.resource_id = s.resource_id and g.gpu_id = s.gpu_id
    inner join profiled as p on p.job_key = s.job_key
    inner join gpu_job_spans as sp on sp.job_key = s.job_key
    inner join claims as c
        on c.resource_id = s.resource_id and c.hour = s.hour and c.slice_start = s.slice_start
        and c.gpu_id = s.gpu_id and c.job_key = s.job_key
    inner join billed as b on b.resource_id = s.resource_id and b.hour = s.hour
    inner join gpu_resources as r on r.resource_id = s.resource_id
    left join smaller_fits as f on f.job_key = s.job_key
    where sp.runtime_s >= $min_runtime_minutes * 60
        and (g.util_mean <= $unused_util_pct or p.mig_slices < 7 or f.job_key is not null)
),

priced_units as (
    select
        resource_id,
        hour,
        slice_start,
        slice_end,
        gpu_id,
        job_key,
        currency,
        kind,
        gpu_hours,
        billed_cost,
        case
            when kind = 'unused' then billed_cost
            when kind = 'mig_fit' then billed_cost * (7 - mig_slices) / 7
            -- the smaller GPU's price is in the currency of the job's instances: never compare across
            when currency = smaller_currency then greatest(billed_cost - smaller_price * gpu_hours, 0)
            else 0
        end as cost
    from job_units
),

job_currency as (
    select job_key, mode(currency) as currency
    from priced_units
    group by job_key
),

waste as (
    select
        u.job_key,
        c.currency,
        sum(u.cost) as waste,
        sum(u.cost) filter (where u.kind = 'unused') as unused_cost,
        sum(u.cost) filter (where u.kind = 'mig_fit') as mig_cost,
        sum(u.cost) filter (where u.kind = 'smaller_gpu') as smaller_cost,
        sum(u.billed_cost) filter (where u.kind = 'smaller_gpu' and u.cost > 0)
        / sum(u.gpu_hours) filter (where u.kind = 'smaller_gpu' and u.cost > 0) as billed_per_gpu_hour,
        sum(u.gpu_hours) filter (where u.cost > 0) as priced_gpu_hours,
        count(distinct u.hour) filter (where u.cost > 0) as priced_hours
    from priced_units as u
    inner join job_currency as c on c.job_key = u.job_key and c.currency = u.currency
    group by u.job_key, c.currency
    having sum(u.cost) > 0
),

combined as (
    select
        j.*,
        w.currency as waste_currency,
        w.waste,
        w.unused_cost,
        w.mig_cost,
        w.smaller_cost,
        w.billed_per_gpu_hour,
        w.priced_gpu_hours,
        w.priced_hours,
        p.gpus,
        p.unused_gpus,
        p.used_gpus,
        p.unused_util_max,
        p.used_util_mean,
        p.used_util_p95,
        p.used_mem_max_mib,
        -- the GPU's memory: telemetry's, else the bill's (nvidia_smi_dmon reports no memory total)
        coalesce(p.used_mem_total_mib, jg.mem_total_mib) as mem_total_mib,
        case when p.used_mem_total_mib is not null then 'telemetry' else jg.mem_total_source end
            as mem_total_source,
        coalesce(p.gpu_model, jg.bill_gpu_model) as model,
        p.unused_indices,
        p.mig_slices,
        p.mig_profile,
        f.gpu_model as smaller_gpu,
        f.gpu_memory_gib as smaller_gpu_memory_gib,
        f.peak_tflops as smaller_gpu_peak_tflops,
        f.job_peak_tflops,
        f.price as smaller_price,
        f.price_kind as smaller_price_kind,
        f.price_note as smaller_price_note,
        f.list_price as smaller_list_price,
        f.measured_price as smaller_measured_price,
        f.projected_p95 as smaller_projected_p95,
        sp.runtime_s as observed_runtime_s,
        coalesce(array_to_string(j.hosts, ', '), array_to_string(p.resource_ids, ', ')) as host_text,
        regexp_replace(coalesce(p.gpu_model, jg.bill_gpu_model, 'GPU'), '^NVIDIA\s+', '') as gpu_label,
        -- the memory the used GPUs held, for the reason: never NULL (printf with a NULL argument is NULL)
        case
            when p.used_mem_max_mib is null then 'unmeasured memory'
            when coalesce(p.used_mem_total_mib, jg.mem_total_mib) > 0 then printf(
                'at most %s of %s MiB (%.1f%%)',
                printf('%,d', p.used_mem_max_mib::bigint),
                printf('%,d', coalesce(p.used_mem_total_mib, jg.mem_total_mib)::bigint),
                100 * p.used_mem_max_mib / coalesce(p.used_mem_total_mib, jg.mem_total_mib)
            )
            else printf('at most %s MiB', printf('%,d', p.used_mem_max_mib::bigint))
        end as mem_text,
        case
            when sp.runtime_s >= 3600 then printf('%.1f h', sp.runtime_s / 3600)
            when sp.runtime_s >= 60 then printf('%.0f min', sp.runtime_s / 60)
            else printf('%.0f s', sp.runtime_s)
        end as runtime_text
    from waste as w
    inner join candidates as j on j.job_key = w.job_key
    inner join profiled as p on p.job_key = w.job_key
    inner join gpu_job_spans as sp on sp.job_key = w.job_key
    left join job_gpu as jg on jg.job_key = w.job_key
    left join smaller_fits as f on f.job_key = w.job_key and coalesce(w.smaller_cost, 0) > 0
)

select
    job_key as resource_id,
    -- what a finding about one job calls it (pipelines/catalog/scheduler_names.csv)
    coalesce(
        (select n.job_type from scheduler_names as n where n.scheduler = combined.scheduler),
        (select n.job_type from scheduler_names as n where n.scheduler = '*')
    ) as resource_type,
    provider,
    account_id,
    region_id,
    team,
    project,
    user as owner,
    job_id,
    'waste' as status,
    -- every printf argument below is non-NULL (coalesced where the data may lack it): a NULL reason would
    -- fail the findings table's NOT NULL and lose the rule's whole week
    printf('Job %s%s on %s ', coalesce(job_id, job_key), coalesce(' (' || job_name || ')', ''), host_text)
    || case
        when unused_gpus > 0 and used_gpus > 0 then printf(
            'used %d of its %d×%s for %s: %d GPU(s) averaged ≤%.1f%% util all job long (the others %.1f%%)',
            used_gpus, gpus, gpu_label, runtime_text, unused_gpus, coalesce(unused_util_max, 0),
            coalesce(used_util_mean, 0)
        )
        when unused_gpus > 0 then printf(
            'held %d×%s for %s without using them (≤%.1f%% util all job long)',
            gpus, gpu_label, runtime_text, coalesce(unused_util_max, 0)
        )
        else ''
    end
    || case
        when mig_slices < 7 then printf(
            '%sheld %d×%s for %s at %.1f%% mean / %.0f%% p95 util and %s: '
            || 'a %s MIG slice (%d/7 of the GPU) fits, so %d/7 of %s cost bought nothing',
            case when unused_gpus > 0 then '; its used GPUs ' else '' end,
            used_gpus, gpu_label, runtime_text, coalesce(used_util_mean, 0), coalesce(used_util_p95, 0),
            mem_text, coalesce(mig_profile, printf('%dg', mig_slices)), mig_slices, 7 - mig_slices,
            case when used_gpus = 1 then 'its' else 'their' end
        )
        else ''
    end
    || case
        when smaller_gpu is not null then printf(
            '%sheld %d×%s for %s at %.1f%% mean / %.0f%% p95 util and %s: '
            || 'a smaller GPU fits, %s (%s GiB, %s TFLOP/s against %s; its p95 util would be about %.0f%%), '
            || 'at %s %.2f per GPU-hour (%s) against %s %.2f per GPU-hour %s',
            case when unused_gpus > 0 then '; its used GPUs ' else '' end,
            used_gpus, gpu_label, runtime_text, coalesce(used_util_mean, 0), coalesce(used_util_p95, 0),
            mem_text, smaller_gpu, printf('%g', smaller_gpu_memory_gib),
            printf('%g', smaller_gpu_peak_tflops), printf('%g', job_peak_tflops),
            coalesce(smaller_projected_p95, 0), waste_currency, smaller_price,
            coalesce(smaller_price_note, smaller_price_kind), waste_currency, coalesce(billed_per_gpu_hour, 0),
            -- the job's own GPU: a bill's price, or a `pricing:` cost model's (never called billed)
            (select case string_agg(distinct r.pricing_basis, '+' order by r.pricing_basis)
                when 'owned' then 'of modelled hours (owned)'
                when 'contract' then 'of contract hours'
                else 'billed'
            end from resources as r where list_contains(resource_ids, r.resource_id))
        )
        else ''
    end
    || printf(', costing %s %.2f.', waste_currency, waste) as reason,
    json_object(
        'job_id', job_id,
        'job_name', job_name,
        'user', user,
        'state', state,
        'started_at', strftime(started_at, '%Y-%m-%dT%H:%M:%SZ'),
        'ended_at', strftime(ended_at, '%Y-%m-%dT%H:%M:%SZ'),
        'runtime_hours', round(observed_runtime_s / 3600, 4),
        'hosts', hosts,
        'resource_ids', resource_ids,
        'gpu_model', model,
        'gpus', gpus,
        'gpus_requested', gpus_requested,
        'unused_gpus', unused_gpus,
        'unused_gpu_indices', unused_indices,
        'unused_util_max_pct', round(unused_util_max, 2),
        'used_gpus', used_gpus,
        'used_util_mean_pct', round(used_util_mean, 2),
        'used_util_p95_pct', round(used_util_p95, 2),
        'used_mem_max_mib', round(used_mem_max_mib, 0),
        'mem_total_mib', round(mem_total_mib, 0),
        'mem_total_source', mem_total_source,
        'mig_profile', mig_profile,
        'mig_slices', case when mig_slices < 7 then mig_slices end,
        'priced_gpu_hours', round(priced_gpu_hours, 4),
        'unused_gpu_cost', round(coalesce(unused_cost, 0), 2),
        'mig_fit_cost', round(coalesce(mig_cost, 0), 2),
        'smaller_gpu', smaller_gpu,
        'smaller_gpu_memory_gib', smaller_gpu_memory_gib,
        'smaller_gpu_peak_tflops', smaller_gpu_peak_tflops,
        'gpu_peak_tflops', job_peak_tflops,
        'smaller_gpu_p95_util_pct', round(smaller_projected_p95, 1),
        'smaller_gpu_price_per_gpu_hour', round(smaller_price, 6),
        'smaller_gpu_price_kind', smaller_price_kind,
        'smaller_gpu_price_note', smaller_price_note,
        'smaller_gpu_list_price_per_gpu_hour', round(smaller_list_price, 6),
        'smaller_gpu_measured_price_per_gpu_hour', round(smaller_measured_price, 6),
        'billed_per_gpu_hour', round(billed_per_gpu_hour, 4),
        'smaller_gpu_fit_cost', round(coalesce(smaller_cost, 0), 2),
        'team_source', team_source
    ) as evidence,
    waste::decimal(18, 6) as estimated_waste,
    waste_currency as currency,
    'cost_hourly ÷ GPUs × the job''s hours for each GPU it did not use, plus (7 − MIG slices) / 7 of it '
    || 'for each GPU a MIG slice would have served, or else (that cost − the smaller GPU''s price per '
    || 'GPU-hour × the hours, never below 0) for each GPU a smaller GPU would have served, in hours some '
    || 'GPU of the instance worked' as waste_basis
from combined
order by estimated_waste desc, resource_id
