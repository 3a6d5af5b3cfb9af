-- A billing timestamp -> naive UTC TIMESTAMP. Takes a TIMESTAMP (Parquet's UTC timestamps) or VARCHAR in the
-- ISO 8601 forms billing exports write: `2024-11-01T00:00:00Z`, `2024-11-01T00:00:00.000Z`,
-- `2024-11-01 00:00:00` (no zone = UTC), `2024-11-01 00:00:00.000`, `2024-11-01 00:00:00 UTC`,
-- `2022-08-01 03:00:00+00:00`, `2024-11-01` (billing_ts_form says which shapes). Nothing else is guessed: text
-- that does not start `YYYY-MM-DD` (`4/1/25`, which a plain cast reads as the year 4) raises, and so does an
-- impossible value (`2023-02-01T30:00:00Z`); the billing reader then names its row and column. `fmt` (a
-- source's options.date_format, strptime-style) reads a producer that writes another form, and only that form.
-- A TIMESTAMP is taken as it is: `typeof` folds at bind time, so no cast runs. Text and zoned values go
-- through TIMESTAMPTZ and leave by their epoch (make_timestamp), not ICU's timezone(): 2-3x faster.
-- Zoneless `2024-11-01 00:00:00` (19 characters, CUR's and most CSV exports' form) is first parsed by
-- strptime, which matches the whole value or nothing; what it refuses (`2026-11-01 24:00:00`) takes the
-- TIMESTAMPTZ path, which reads it or raises. The last character must be a digit, as strptime reads
-- `05:07:3<TAB>` where the TIMESTAMPTZ cast refuses it. That form is tested first with a LIKE and two
-- ascii() calls, cheaper than billing_ts_form's position checks, and only for values those checks would
-- pass; everything else takes the full checks (billing_ts_slow).
create or replace temp macro billing_ts(s, fmt := null::varchar) as
    case
        when typeof(s) = 'TIMESTAMP' then s::timestamp
        when fmt is not null then make_timestamp(epoch_us(strptime(s::varchar, fmt)))
        when typeof(s) = 'VARCHAR' and s::varchar like '____-__-__ __:__:__'
            and ascii(s::varchar) between 48 and 57 and ascii((s::varchar)[19]) between 48 and 57
            then coalesce(try_strptime(s::varchar, '%Y-%m-%d %H:%M:%S'), billing_ts_slow(s))
        else billing_ts_slow(s)
    end;
-- billing_ts's checks in full, for the text its first test above does not settle
create or replace temp macro billing_ts_slow(s) as
    case
        when typeof(s) = 'VARCHAR' and not billing_ts_form(s::varchar)
            then error('not an ISO 8601 date/time: ' || s::varchar)
        when typeof(s) = 'VARCHAR' and length(s::varchar) = 19 and substr(s::varchar, 11, 1) = ' '
            and substr(s::varchar, 19, 1) between '0' and '9'
            then coalesce(try_strptime(s::varchar, '%Y-%m-%d %H:%M:%S'), make_timestamp(epoch_us(cast(s as timestamptz))))
        else make_timestamp(epoch_us(cast(s as timestamptz)))
    end;
