-- grain: one row per rule of the config's `showback:` section (position = its order; the first rule whose
--   match takes a cost row allocates it)
-- Written from wastewatch.yaml each time the marts are built (pipelines/transform/showback.py); the showback
-- mart reads the rules from here. docs/showback.md explains them. Globs are lower-cased; a NULL list is a
-- filter not given (it matches everything).
create table if not exists showback_rules (
    position integer primary key,         -- 1-based order in the config: rules apply in this order
    name varchar not null,                -- the pool's name, shown beside every amount it allocates
    providers varchar[],                  -- globs on the bill's provider name
    services varchar[],                   -- globs on the bill's service name
    charge_categories varchar[],          -- globs on the FOCUS charge category
    accounts varchar[],                   -- globs on the sub-account id
    resources varchar[],                  -- globs on the billed resource id
    tag_present varchar[],                -- tag keys the resource must carry (normalised keys)
    tag_absent varchar[],                 -- tag keys the resource must not carry (normalised keys)
    split varchar not null,               -- 'even', 'proportional' or 'fixed'
    measure varchar,                      -- proportional: spend, gpu_hours, storage_bytes or busy_gpu_hours
    cluster varchar,                      -- busy_gpu_hours: glob on the scheduler's cluster, lower-cased
    teams varchar[],                      -- even / proportional: the teams it splits among (NULL: every team)
    shares map(varchar, decimal(9, 6)),   -- fixed: percent per team (summing to 100)
    source varchar not null,              -- where the rule comes from (config file and position)
    updated_at timestamp not null
);
