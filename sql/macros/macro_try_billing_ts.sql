-- billing_ts that returns NULL instead of raising (used to find the bad row after a failed load); an
-- infinite value, which the cast reads, is NULL too: a charge cannot start or end at infinity.
create or replace temp macro try_billing_ts(s, fmt := null::varchar) as
    case
        when typeof(s) = 'TIMESTAMP' then s::timestamp
        when fmt is not null then try(make_timestamp(epoch_us(try_strptime(s::varchar, fmt))))
        when typeof(s) = 'VARCHAR' and not billing_ts_form(s::varchar) then null
        else case when not isinf(try_cast(s as timestamptz)) then try(make_timestamp(epoch_us(try_cast(s as timestamptz)))) end
    end;
