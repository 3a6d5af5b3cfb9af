-- billing_date that returns NULL instead of raising (used to find the bad row after a failed load).
create or replace temp macro try_billing_date(s, fmt := null::varchar) as
    case
        when fmt is not null then try_strptime(trim(s::varchar), fmt)::timestamp
        when not billing_date_form(trim(s::varchar)) then null
        else try_strptime(trim(s::varchar), ['%m/%d/%Y', '%Y-%m-%d', '%Y-%m-%d %H:%M:%S', '%Y-%m-%dT%H:%M:%S', '%Y-%m-%dT%H:%M:%SZ', '%Y-%m-%dT%H:%M:%S.%fZ'])
    end;
