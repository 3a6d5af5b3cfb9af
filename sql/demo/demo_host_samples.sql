-- The demo's nvidia-smi samples of one host: a sample a minute for each of its 8 GPUs in every hour its
-- schedule (_demo_schedule) has it on, with utilisation, memory and power drawn from the hour's state
-- (busy, partial, starved, notebook, idle) and a seeded hash; `line` is the nvidia-smi CSV line.
-- params: $host, $seed
create or replace temp table _host_samples as
with hours as (
    select * from _demo_schedule where host = $host and state not in ('off', 'dark', 'dark_idle')
),
grid as (
    select h.*, m.m as minute, g.g as gpu,
           (hash(h.host, h.hour_idx, m.m, g.g, $seed) % 1000000) / 1000000.0 as u
    from hours h, range(60) m(m), range(8) g(g)
),
vals as (
    select *,
        case
            when state = 'busy' or (state = 'partial' and gpu < 2) then 70 + floor(u * 29)
            when state = 'starved' then case when minute % 4 = 0 then 80 + floor(u * 15) else floor(u * 4) end
            else 0
        end::int as util,
        case
            when state = 'busy' or (state = 'partial' and gpu < 2) then round(mem_total * (0.72 + 0.06 * u))
            when state = 'starved' then round(mem_total * (0.30 + 0.02 * u))
            when state = 'notebook' then round(mem_total * 0.86)
            when state = 'partial' then 512
            else 4
        end::int as mem_used,
        case
            when state = 'busy' or (state = 'partial' and gpu < 2) then power_limit * (0.62 + 0.28 * u)
            when state = 'starved' then power_limit * (0.30 + 0.10 * u)
            when state = 'notebook' then idle_power * 1.6 + 4 * u
            else idle_power + 4 * u
        end as power
    from grid
)
select
    week_idx,
    hour_idx, minute, gpu, state, util,
    strftime(ts + to_minutes(minute) + to_milliseconds(310 + 11 * gpu), '%Y/%m/%d %H:%M:%S.%g')
    || ', ' || gpu_name
    || ', 00000000:' || printf('%02X', [24, 42, 58, 93, 154, 171, 187, 219][gpu + 1]) || ':00.0'
    || ', GPU-' || substr(md5(host || gpu::varchar), 1, 8) || '-' || substr(md5(host || gpu::varchar), 9, 4)
    || '-' || substr(md5(host || gpu::varchar), 13, 4) || '-' || substr(md5(host || gpu::varchar), 17, 4)
    || '-' || substr(md5(host || gpu::varchar), 21, 12)
    || ', ' || gpu::varchar
    || ', ' || util::varchar || ' %'
    || ', ' || (util // 2)::varchar || ' %'
    || ', ' || mem_total::varchar || ' MiB'
    || ', ' || mem_used::varchar || ' MiB'
    || ', ' || (mem_total - mem_used)::varchar || ' MiB'
    || ', ' || printf('%.2f', power) || ' W'
    || ', ' || printf('%.2f', power_limit) || ' W'
    || ', ' || (30 + util // 3)::varchar
    || ', ' || (case when util > 0 then 1980 else 345 end)::varchar || ' MHz'
    || ', ' || mem_clock::varchar || ' MHz'
    || ', P0' as line
from vals;
