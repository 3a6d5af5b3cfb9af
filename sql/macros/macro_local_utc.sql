-- A zone-less TIMESTAMP read as local time in `zone` -> naive UTC (unchanged when the zone is UTC). The
-- telemetry readers whose files write local time (nvidia-smi, dmon) convert with it, in their staging and
-- where they find the line of a sample dated ahead of the clock.
create or replace temp macro local_utc(t, zone) as
    case when zone = 'UTC' then t else timezone('UTC', timezone(zone, t)) end;
