-- A billing timestamp -> naive UTC TIMESTAMP. Takes VARCHAR in any ISO-8601 form (`2024-11-01T00:00:00Z`,
-- `2024-11-01 00:00:00.000`, `2022-08-01 03:00:00+00:00`; no zone = UTC) or a TIMESTAMP. Strict: an
-- impossible value (`2023-02-01T30:00:00Z`) raises, and the billing reader then names its row and column.
-- A TIMESTAMP (Parquet's UTC timestamps) is taken as it is: `typeof` folds at bind time, so no cast runs
-- (the ICU round trip cost 0.3 s per million Parquet lines for four columns). Text and zoned values go
-- through TIMESTAMPTZ and leave by their epoch (make_timestamp), not ICU's timezone(): 2-3x faster.
-- Zoneless `2024-11-01 00:00:00` (19 characters, CUR's and most CSV exports' form) is first parsed by
-- strptime, which matches the whole value or nothing (0.06 against 0.13 thread-s per million values
-- through TIMESTAMPTZ); what it refuses (`2026-11-01 24:00:00`, `2026-11-01 05:00: 7`) takes the
-- TIMESTAMPTZ path as before, which reads it or raises. Where both read a value, they agree; the last
-- character must be a digit, as strptime reads `05:07:3<TAB>` where the TIMESTAMPTZ cast refuses it.
create or replace temp macro billing_ts(s) as
    case
        when typeof(s) = 'TIMESTAMP' then s::timestamp
        when typeof(s) = 'VARCHAR' and length(s::varchar) = 19 and substr(s::varchar, 11, 1) = ' '
            and substr(s::varchar, 19, 1) between '0' and '9'
            then coalesce(try_strptime(s::varchar, '%Y-%m-%d %H:%M:%S'), make_timestamp(epoch_us(cast(s as timestamptz))))
        else make_timestamp(epoch_us(cast(s as timestamptz)))
    end;
