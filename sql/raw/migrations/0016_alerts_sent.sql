-- schema version 16: the daily alert (`wastewatch alert`) keeps what it posted per finding in alerts_sent, as
-- sql/raw/alerts_sent.sql describes it. A new table: nothing existing changes.
create table if not exists alerts_sent (
    finding_key varchar primary key,
    rule_id varchar not null,
    resource_id varchar,
    status varchar not null,
    daily_waste decimal(18, 6) not null,
    currency varchar,
    as_of timestamp not null,
    action_id varchar,
    action_kind varchar,
    reason varchar,
    sent_at timestamp not null,
    sends integer not null,
    last_live_as_of timestamp,
    stopped_since_sent boolean not null
);
