-- grain: one row per finding the daily alert (`wastewatch alert`) has posted: finding_key (rule x resource)
-- What the alert last sent for a finding, and what the checks since have seen of it. A finding is sent
-- again only when it changed: its 24-hour waste moved by at least `alert.change_pct` percent of
-- daily_waste, its currency or status differs, or a check after the send found it no longer running
-- (stopped_since_sent) and it runs again. A failed post changes no sent_ column (docs/alerts.md).
create table if not exists alerts_sent (
    finding_key varchar primary key,      -- sha1(rule_id|resource_id), 16 hex: the finding across days and weeks
    rule_id varchar not null,             -- GPU001 or GPU004
    resource_id varchar,                  -- the finding's resource (an instance, a job's key, a crash loop)
    status varchar not null,              -- the finding's status when sent (waste)
    daily_waste decimal(18, 6) not null,  -- the waste sent: the rule over the 24 hours of data up to as_of
    currency varchar,                     -- the finding's billing currency
    as_of timestamp not null,             -- the data's now the sent alert was computed to (UTC; sql/alerts/as_of.sql)
    action_id varchar,                    -- the remediation action `wastewatch remediate plan` gives the finding
    action_kind varchar,                  -- stop_instance, or NULL: no automatic action for this rule
    reason varchar,                       -- the finding's reason as sent
    sent_at timestamp not null,           -- when it was posted (UTC)
    sends integer not null,               -- how many times this finding was posted
    last_live_as_of timestamp,            -- as_of of the newest check that found it still running
    stopped_since_sent boolean not null   -- a check after the send found it no longer running
);
