-- grain: one row per acknowledgement (`wastewatch ack`); the latest row per finding_key is in force
-- A finding acknowledged for a week is listed in the report's "acknowledged" section and left out of the
-- waste total; the ack never deletes the finding, and it lapses by itself after acked_until.
create table if not exists finding_acks (
    finding_key varchar not null,         -- the finding across weeks: sha1(rule_id|resource_id), 16 hex
    rule_id varchar not null,
    resource_id varchar,
    finding_id varchar,                   -- the weekly finding id the user named, when they named one
    acked_until date,                     -- inclusive: covers every ISO week starting on or before it; NULL = revoked
    reason varchar not null,
    acked_by varchar,
    acked_at timestamp not null           -- UTC
);
