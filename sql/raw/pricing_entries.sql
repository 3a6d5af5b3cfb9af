-- grain: one row per entry of the config's `pricing:` section (position = its order; first match wins)
-- Written from wastewatch.yaml each time the marts are built (pipelines.transform.write_pricing); the
-- marts price the GPU hosts no bill lists from it. docs/gpu.md "Cost models" gives the formulas.
create table if not exists pricing_entries (
    position integer primary key,         -- 1-based order in the config: the first entry a host matches prices it
    basis varchar not null,               -- 'owned' or 'contract'
    match_host varchar,                   -- glob on the host name, lower-cased
    match_gpu_model varchar,              -- glob on the GPU model, lower-cased (no * or ?: contained anywhere)
    match_cluster varchar,                -- glob on the host's cluster, lower-cased
    match_tags map(varchar, varchar),     -- inventory tags the host must carry (normalised keys)
    currency varchar not null,
    per_gpu_hour decimal(28, 12),         -- contract: rate per GPU-hour
    per_node_hour decimal(28, 12),        -- contract: rate per host-hour
    valid_from date,                      -- contract: first day (NULL: the host's first data)
    valid_to date,                        -- last day it prices, inclusive (contract: valid_to; owned: retired; NULL: open)
    gpus integer,                         -- GPUs per host (owned: required; contract: NULL = as observed)
    purchase_price decimal(28, 12),       -- owned: price of one host
    residual_value decimal(28, 12),       -- owned: value at the end of its life
    life_years decimal(18, 6),            -- owned: years written off over
    in_service date,                      -- owned: first day it cost (NULL: its first telemetry)
    pue decimal(18, 6),                   -- owned: power usage effectiveness
    kwh_price decimal(28, 12),            -- owned: price per kWh
    facility_per_month decimal(28, 12),   -- owned: rack, support, network per host and month
    nameplate_watts decimal(18, 6),       -- owned: watts per GPU when telemetry has none (NULL: its power limit)
    host_overhead decimal(18, 6),         -- owned: host power as a factor on its GPUs' power
    source varchar not null,              -- where the entry comes from (config file and position)
    updated_at timestamp not null
);
