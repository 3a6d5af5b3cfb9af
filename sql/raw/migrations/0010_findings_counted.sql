-- schema version 10: findings carry what findings.csv states about each finding besides its lifecycle:
-- finding_key (the finding across weeks), attention (an attention rule's: never waste), the ack in force
-- for its week (acknowledged, acked_until, ack_reason, acked_by) and counted (adds to the week's waste
-- total: status waste, not an attention category, not acknowledged), so a query of "waste by team" needs
-- no rule of its own. Existing findings are filled in here with the same logic as
-- sql/raw/findings/flags.sql, which keeps them current from now on. A warehouse older than the acks
-- (schema versions 1 and 2) gets finding_acks here, as sql/raw/finding_acks.sql describes it, to read.
create table if not exists finding_acks (
    finding_key varchar not null,
    rule_id varchar not null,
    resource_id varchar,
    finding_id varchar,
    acked_until date,
    reason varchar not null,
    acked_by varchar,
    acked_at timestamp not null
);
alter table findings add column finding_key varchar;
alter table findings add column attention boolean;
alter table findings add column counted boolean;
alter table findings add column acknowledged boolean;
alter table findings add column acked_until date;
alter table findings add column ack_reason varchar;
alter table findings add column acked_by varchar;
update findings as f
set
    finding_key = n.finding_key,
    attention = n.attention,
    acknowledged = n.acknowledged,
    acked_until = n.acked_until,
    ack_reason = n.ack_reason,
    acked_by = n.acked_by,
    counted = n.status = 'waste' and not n.attention and not n.acknowledged
from (
    select
        k.finding_id,
        k.finding_key,
        k.status,
        k.category in ('unattributed', 'anomaly', 'budget') as attention,
        coalesce(a.acked_until >= k.week_start, false) as acknowledged,
        case when a.acked_until >= k.week_start then a.acked_until end as acked_until,
        case when a.acked_until >= k.week_start then a.ack_reason end as ack_reason,
        case when a.acked_until >= k.week_start then a.acked_by end as acked_by
    from (
        select
            finding_id,
            status,
            category,
            week_start,
            substr(sha1(rule_id || '|' || coalesce(resource_id, '')), 1, 16) as finding_key
        from findings
    ) as k
    left join (
        select
            finding_key,
            arg_max_null(acked_until, acked_at) as acked_until,
            arg_max_null(reason, acked_at) as ack_reason,
            arg_max_null(acked_by, acked_at) as acked_by
        from finding_acks
        group by finding_key
    ) as a on a.finding_key = k.finding_key
) as n
where n.finding_id = f.finding_id;
