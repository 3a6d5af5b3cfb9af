-- grain: one row: the week's training-log lines that matched no job
-- depends_on: train_steps, int_train_intervals
-- params: $window_start, $window_end
-- A training-log line that names no known job id and ran on no host at a time a scheduler job did is kept
-- in train_steps but measures nothing (no job, no MFU). The report counts such lines so they are never
-- dropped unseen: a log of a run outside the scheduler, or a job record that was never loaded.
-- lines: lines written in the week that matched no job; files: the log files they are in
-- hosts: their hosts (at most 10, by lines), for the report's data-quality line
with unmatched as (
    select
        s.x_file_id,
        coalesce(s.host, '(no host)') as host
    from train_steps as s
    where s.ts >= $window_start and s.ts < $window_end
        and not exists (
            select 1
            from int_train_intervals as i
            where i.x_file_id = s.x_file_id and i.x_line = s.x_line
        )
),

by_host as (
    select host, count(*) as lines
    from unmatched
    group by host
)

select
    (select count(*) from unmatched) as lines,
    (select count(distinct x_file_id) from unmatched) as files,
    coalesce((select list(host order by lines desc, host)[1:10] from by_host), []) as hosts
