-- grain: one row per applied schema version
-- The warehouse's schema version; `pipelines.warehouse.migrate` upgrades older files in one transaction.
create table if not exists schema_version (
    version integer primary key,
    description varchar not null,
    applied_at timestamp not null
);
