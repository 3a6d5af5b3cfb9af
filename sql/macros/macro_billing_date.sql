-- A day as billing exports write it (`09/21/2023`, `9/2/2023`, `2020-09-22`, `2019-07-29 00:00:00`) ->
-- TIMESTAMP at 00:00 UTC. Strict: a value in none of these forms raises (see try_billing_date).
create or replace temp macro billing_date(s) as
    strptime(trim(s::varchar), ['%m/%d/%Y', '%Y-%m-%d', '%Y-%m-%d %H:%M:%S', '%Y-%m-%dT%H:%M:%S', '%Y-%m-%dT%H:%M:%SZ', '%Y-%m-%dT%H:%M:%S.%fZ']);
