-- grain: one row per configured checkpoint pattern or dataset root (`checkpoints:` / `datasets:`)
-- Refreshed by the storage readers on every ingest from wastewatch.yaml; the storage marts match object
-- paths against these (first checkpoint pattern first; a checkpoint is never also a dataset file).
create table if not exists storage_patterns (
    kind varchar not null,                -- checkpoint | dataset
    position integer not null,            -- order in the config (first match wins)
    pattern varchar not null,             -- as written in the config
    store varchar not null,               -- s3 | fs
    prefix varchar not null,              -- the literal location before the first placeholder or wildcard
    segments struct(name varchar, lit_prefix varchar, lit_suffix varchar, exact boolean)[] not null,
    open_ended boolean not null,          -- ends in ** (any deeper path)
    project_idx integer,                  -- 1-based segment (after prefix) holding each placeholder
    run_idx integer,
    step_idx integer,
    metric_idx integer,
    metric_name varchar,                  -- loss (lower is better) | score (higher is better)
    dataset_idx integer,
    updated_at timestamp not null
);
