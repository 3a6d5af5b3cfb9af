-- A billing timestamp -> naive UTC TIMESTAMP. Takes VARCHAR in any ISO-8601 form (`2024-11-01T00:00:00Z`,
-- `2024-11-01 00:00:00.000`, `2022-08-01 03:00:00+00:00`; no zone = UTC) or a TIMESTAMP. Strict: an
-- impossible value (`2023-02-01T30:00:00Z`) raises, and the billing reader then names its row and column.
-- A TIMESTAMP (Parquet's UTC timestamps) is taken as it is: `typeof` folds at bind time, so the ICU
-- round trip (0.3 s per million lines for four columns) only runs on text and zoned values.
create or replace temp macro billing_ts(s) as
    case when typeof(s) = 'TIMESTAMP' then s::timestamp else timezone('UTC', cast(s as timestamptz)) end;
