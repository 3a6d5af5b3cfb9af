-- COST003 spend-anomaly
-- depends_on: cost_hourly (marts only)
-- params: $window_start, $window_end, $lookback_days, $by_day_of_week, $min_baseline_days, $max_robust_z,
--         $min_excess, $min_increase_pct
-- Daily effective spend per (team, service, currency) against a robust baseline: the median and MAD of
-- the same kind of day (weekday/weekend, or the same day of the week) over the trailing `lookback_days`.
-- A day is anomalous when it is above the median by more than max_robust_z scaled MADs, by at least
-- min_excess and by at least min_increase_pct. A series counts from its first day with spend (days the
-- bill covers with no spend for it are zeros; a new series is not compared with days before it existed).
with daily as (
    select
        hour::date as day,
        coalesce(team, '(untagged)') as series_team,
        team,
        coalesce(service_name, '(no service name)') as service,
        any_value(service_category) as service_category,
        billing_currency as currency,
        sum(effective_cost) as spend
    from cost_hourly
    where hour >= $window_start::timestamp - to_days($lookback_days)
        and hour < $window_end::timestamp
    group by all
),

bill_days as (
    -- days the bill covers at all (any series): a series missing on such a day spent nothing that day
    select distinct day
    from daily
),

series as (
    select
        series_team,
        any_value(team) as team,
        service,
        currency,
        any_value(service_category) as service_category,
        min(day) as first_day
    from daily
    group by series_team, service, currency
),

grid as (
    select
        s.series_team,
        s.team,
        s.service,
        s.currency,
        s.service_category,
        b.day,
        coalesce(d.spend, 0) as spend,
        case when $by_day_of_week then isodow(b.day) else (isodow(b.day) >= 6)::integer end as day_kind
    from series as s
    inner join bill_days as b on b.day >= s.first_day
    left join daily as d
        on d.series_team = s.series_team and d.service = s.service and d.currency = s.currency and d.day = b.day
),

baselined as (
    select
        *,
        median(spend) over w as baseline,
        mad(spend) over w as mad,
        count(*) over w as baseline_days
    from grid
    window w as (
        partition by series_team, service, currency, day_kind
        order by day
        range between to_days($lookback_days) preceding and interval 1 day preceding
    )
),

judged as (
    select
        *,
        spend - baseline as excess,
        case when mad > 0 then (spend - baseline) / (1.4826 * mad) end as robust_z,
        case
            when baseline_days < $min_baseline_days then 'no_baseline'
            when spend - baseline >= $min_excess
                and spend >= baseline * (1 + $min_increase_pct / 100.0)
                and (mad = 0 or (spend - baseline) / (1.4826 * mad) > $max_robust_z)
                then 'anomaly'
            else 'normal'
        end as verdict
    from baselined
    where day >= $window_start::timestamp::date and day < $window_end::timestamp::date
),

per_series as (
    select
        series_team,
        any_value(team) as team,
        service,
        currency,
        any_value(service_category) as service_category,
        sum(spend) as week_spend,
        count(*) filter (where verdict = 'anomaly') as anomalous_days,
        coalesce(sum(excess) filter (where verdict = 'anomaly'), 0) as excess,
        count(*) filter (where verdict = 'no_baseline' and spend >= $min_excess) as unjudged_days,
        coalesce(sum(spend) filter (where verdict = 'no_baseline' and spend >= $min_excess), 0) as unjudged_spend,
        max(spend) filter (where verdict = 'anomaly') as peak_spend,
        arg_max(day, excess) filter (where verdict = 'anomaly') as peak_day,
        arg_max(baseline, excess) filter (where verdict = 'anomaly') as peak_baseline,
        list_sort(list({
            'day': strftime(day, '%Y-%m-%d'),
            'spend': round(spend, 2),
            'baseline_median': round(baseline, 2),
            'baseline_mad': round(mad, 2),
            'baseline_days': baseline_days,
            'robust_z': round(robust_z, 1),
            'excess': round(excess, 2)
        }) filter (where verdict = 'anomaly')) as days,
        min(day) filter (where verdict = 'no_baseline' and spend >= $min_excess) as first_unjudged_day
    from judged
    group by series_team, service, currency
),

unjudged as (
    -- series with days big enough to matter but too little history: one finding says which, not one each
    select
        count(*) as series,
        sum(unjudged_spend) as spend,
        sum(unjudged_days) as days,
        min(first_unjudged_day) as first_day,
        any_value(currency) as currency,
        count(distinct currency) as currencies,
        list({'series': series_team || ' / ' || service || ' (' || currency || ')',
              'days': unjudged_days,
              'spend': round(unjudged_spend, 2)} order by unjudged_spend desc, series_team, service)
            as series_list
    from per_series
    where anomalous_days = 0 and unjudged_days > 0
    having count(*) > 0
),

-- the resources behind the series on its anomalous days, largest first: where to look
culprits as (
    select
        coalesce(c.team, '(untagged)') as series_team,
        coalesce(c.service_name, '(no service name)') as service,
        c.billing_currency as currency,
        coalesce(c.resource_id, '(no resource id)') as resource_id,
        sum(c.effective_cost) as spend
    from cost_hourly as c
    inner join judged as j
        on j.verdict = 'anomaly'
        and j.day = c.hour::date
        and j.series_team = coalesce(c.team, '(untagged)')
        and j.service = coalesce(c.service_name, '(no service name)')
        and j.currency = c.billing_currency
    where c.hour >= $window_start and c.hour < $window_end
    group by all
),

top_culprits as (
    select
        series_team,
        service,
        currency,
        list({'resource_id': resource_id, 'spend': round(spend, 2)} order by spend desc, resource_id)[1:5]
            as resources
    from culprits
    group by all
)

select
    f.series_team || ' / ' || f.service || ' (' || f.currency || ')' as resource_id,
    'spend series (team × service)' as resource_type,
    null::varchar as provider,
    null::varchar as account_id,
    null::varchar as region_id,
    f.team,
    null::varchar as project,
    null::varchar as owner,
    null::varchar as job_id,
    'waste' as status,
    printf(
        '%s spend of team %s on %s was %s %.2f on %s against a usual %s %.2f for that kind of day '
        || '(median of the trailing %d days); %d anomalous day(s) this week, %s %.2f above the baseline.',
        coalesce(f.service_category, 'Other'), f.series_team, f.service, f.currency, f.peak_spend,
        strftime(f.peak_day, '%a %Y-%m-%d'), f.currency, f.peak_baseline, $lookback_days,
        f.anomalous_days, f.currency, f.excess
    ) as reason,
    json_object(
        'team', f.series_team,
        'service', f.service,
        'service_category', f.service_category,
        'week_spend', round(f.week_spend, 2),
        'anomalous_days', f.anomalous_days,
        'days', f.days,
        'excess', round(f.excess, 2),
        'amount_at_stake', round(f.excess, 2),
        'baseline', case when $by_day_of_week then 'same day of the week' else 'weekdays vs weekends' end,
        'lookback_days', $lookback_days,
        'top_resources', t.resources
    ) as evidence,
    f.excess::decimal(18, 6) as estimated_waste,
    f.currency,
    printf(
        'amount at stake, not waste: the spend above the baseline (median of the trailing %d days of the same '
        || 'kind of day) on the anomalous days',
        $lookback_days
    ) as waste_basis
from per_series as f
left join top_culprits as t
    on t.series_team = f.series_team and t.service = f.service and t.currency = f.currency
where f.anomalous_days > 0

union all

select
    '(spend series without a baseline)' as resource_id,
    'spend series (team × service)' as resource_type,
    null::varchar as provider,
    null::varchar as account_id,
    null::varchar as region_id,
    null::varchar as team,
    null::varchar as project,
    null::varchar as owner,
    null::varchar as job_id,
    'insufficient_data' as status,
    printf(
        '%d spend series (%s) had days from %s with fewer than %d comparable earlier days and were not '
        || 'judged: new spend streams, or too little billing history yet.',
        u.series,
        case when u.currencies = 1 then printf('%s %.2f on those days', u.currency, u.spend)
            else 'several currencies' end,
        strftime(u.first_day, '%Y-%m-%d'), $min_baseline_days
    ) as reason,
    json_object(
        'series_count', u.series,
        'unjudged_days', u.days,
        'series', u.series_list[1:20],
        'min_baseline_days', $min_baseline_days,
        'lookback_days', $lookback_days
    ) as evidence,
    0::decimal(18, 6) as estimated_waste,
    case when u.currencies = 1 then u.currency end as currency,
    'not judged: too little history for a baseline' as waste_basis
from unjudged as u

order by estimated_waste desc, resource_id
