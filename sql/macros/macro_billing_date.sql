-- A day as billing exports write it -> TIMESTAMP at 00:00 UTC: Azure's `09/21/2023` and `9/2/2023`
-- (month first, four-digit year), `2020-09-22`, `2019-07-29 00:00:00`, `2024-09-01T00:00:00Z` and
-- `2024-09-01T00:00:00.000Z`; `fmt` (options.date_format, strptime-style) reads another form instead.
-- Strict: any other value raises (see try_billing_date). A two-digit year (`4/1/25`) is refused, not
-- read as the year 25 (strptime's %Y takes one to four digits).
create or replace temp macro billing_date(s, fmt := null::varchar) as
    case
        when fmt is not null then strptime(trim(s::varchar), fmt)::timestamp
        when not billing_date_form(trim(s::varchar)) then error('not a billing date: ' || s::varchar)
        else strptime(trim(s::varchar), ['%m/%d/%Y', '%Y-%m-%d', '%Y-%m-%d %H:%M:%S', '%Y-%m-%dT%H:%M:%S', '%Y-%m-%dT%H:%M:%SZ', '%Y-%m-%dT%H:%M:%S.%fZ'])
    end;
