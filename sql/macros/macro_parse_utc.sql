-- A timestamp string in any ISO-8601-like form -> naive UTC TIMESTAMP. Strings with an offset or Z are
-- converted; strings without a zone are read as `zone` (FOCUS requires UTC; nvidia-smi writes local time).
-- The year must be written with four digits: DuckDB's cast reads `26-11-30` as the year 26, which no
-- producer means, so such a string is NULL (unreadable) rather than a date two thousand years ago.
create or replace temp macro parse_utc(s, zone) as
    case
        when not regexp_matches(s, '^\s*\d{4}[^0-9]') then null
        when regexp_matches(trim(s), '(Z|[+-]\d{2}(:?\d{2})?)$')
            then try_cast(trim(s) as timestamptz) at time zone 'UTC'
        else timezone('UTC', timezone(zone, try_cast(replace(trim(s), '/', '-') as timestamp)))
    end;
