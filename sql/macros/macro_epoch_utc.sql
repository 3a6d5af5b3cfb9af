-- Epoch seconds or milliseconds -> naive UTC TIMESTAMP, to the microsecond. A number from 1e11 on is
-- milliseconds (Prometheus writes them; epoch seconds, as OpenMetrics writes, stay below 1e11 until 5138).
-- The telemetry readers read epoch times with it, in their staging and where they find the line of a sample
-- dated ahead of the clock.
create or replace temp macro epoch_utc(n) as
    case when n >= 100000000000 then make_timestamp((n * 1000)::bigint) else to_timestamp(n)::timestamp end;
