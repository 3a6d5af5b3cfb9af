-- params: $week_start
-- One remediation action per actionable finding of the week: status waste, not acknowledged, of a rule
-- wastewatch knows how to act on. GPU001 stops an EC2 instance; STO004 aborts a bucket's incomplete
-- multipart uploads started before the rule's cutoff; STO003 puts a lifecycle transition on a run's
-- checkpoint prefix; STO001 deletes the checkpoints of a failed or unknown run (its whole prefix). What
-- wastewatch cannot act on (a Slurm or Kubernetes host, another cloud's store, a superseded run's single
-- steps) is listed with executable = false and a manual_reason, for the JSON plan and other tooling.
-- params holds what the plan saw, which `remediate apply` re-checks against the target right before acting.
with actionable as (
    select
        f.*,
        remediation_kind(f.rule_id) as kind,  -- sql/macros/macro_remediation.sql
        coalesce(f.resource_id, '') as target
    from findings as f
    where
        f.week_start = $week_start::date
        and f.status = 'waste'
        and not coalesce(f.acknowledged, false)
        and remediation_kind(f.rule_id) is not null
),

shaped as (
    select
        a.*,
        a.kind in ('delete_prefix', 'abort_multipart_uploads') as destructive,
        case
            when a.kind = 'stop_instance' and not regexp_full_match(a.target, 'i-[0-9a-f]{8,17}')
                then 'not an EC2 instance: stop it through its scheduler or cloud (Slurm, Kubernetes, ...)'
            when a.kind <> 'stop_instance' and not starts_with(a.target, 's3://')
                then 'not an s3:// location: act on it with the store''s own tools'
            when a.kind = 'delete_prefix' and coalesce(a.evidence ->> 'category', '') not in ('failed', 'unknown')
                then 'a superseded run keeps its newest steps: delete the older steps with a retention script'
        end as manual_reason,
        case a.kind
            when 'stop_instance' then json_object(
                'region', a.region_id,
                'instance_type', a.evidence ->> 'instance_type',
                'host', a.evidence ->> 'host'
            )
            when 'abort_multipart_uploads' then json_object(
                'initiated_before', strftime(
                    coalesce(try_cast(a.evidence ->> 'as_of' as timestamp), a.week_end + interval 1 day)
                    - to_days(coalesce(try_cast(a.params ->> 'min_age_days' as integer), 7)),
                    '%Y-%m-%dT%H:%M:%SZ'
                ),
                'uploads', try_cast(a.evidence ->> 'uploads' as integer),
                'bytes', try_cast(a.evidence ->> 'bytes' as bigint)
            )
            when 'lifecycle_transition' then json_object(
                'storage_class', coalesce(a.evidence ->> 'target_class', a.params ->> 'target_class', 'GLACIER_IR'),
                'days', coalesce(try_cast(a.params ->> 'min_age_days' as integer), 30),
                'bytes', try_cast(a.evidence ->> 'bytes' as bigint)
            )
            when 'delete_prefix' then json_object(
                'category', a.evidence ->> 'category',
                'last_write', a.evidence ->> 'last_write',
                'objects', try_cast(a.evidence ->> 'objects' as integer),
                'bytes', try_cast(a.evidence ->> 'bytes' as bigint)
            )
        end as planned
    from actionable as a
)

select
    remediation_action_id(rule_id, resource_id) as action_id,
    coalesce(finding_key, substr(sha1(rule_id || '|' || coalesce(resource_id, '')), 1, 16)) as finding_key,
    finding_id,
    rule_id,
    resource_id,
    week_start,
    kind,
    target,
    planned as params,
    destructive,
    manual_reason is null as executable,
    manual_reason,
    provider,
    account_id,
    region_id,
    team,
    project,
    owner,
    estimated_waste,
    currency
from shaped
order by estimated_waste desc, rule_id, target
