-- grain: one row for the config's `spares:` section (none without one)
-- Written from wastewatch.yaml each time the marts are built (pipelines.transform.spares.write_spares); the
-- gpu_claims mart gives the idle time of the hosts it names to the `spare` claim ahead of GPU001, and the
-- report holds their GPU-hours against policy_share (docs/gpu.md "Spare pools").
create table if not exists spare_pools (
    position integer primary key,         -- 1 (one `spares:` section)
    match_hosts varchar[],                -- globs on the host name, lower-cased; any of them matches (NULL: any host)
    match_tags map(varchar, varchar),     -- tags the host must carry on its bill or inventory record (normalised keys)
    policy_share double not null,         -- share of the fleet's GPU-hours the spares may hold (0..1)
    source varchar not null,              -- where the section comes from (config file)
    updated_at timestamp not null
);
