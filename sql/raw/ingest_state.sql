-- grain: one row per job whose last full run built every mart and published the warehouse (nightly_ingest)
-- What that run built from. A nightly `wastewatch ingest` whose config, code and ledger still match the row,
-- and whose sources list no new, changed or removed file, has nothing to do: it stops before Dagster
-- (pipelines/transform/nothing_new.py, docs/scaling.md). `wastewatch ingest --full` ignores the row.
create table if not exists ingest_state (
    job varchar primary key,              -- the Dagster job: nightly_ingest
    recorded_at timestamp not null,       -- when the run recorded it, just before publishing (UTC)
    config_digest varchar not null,       -- sha256 of every setting of the loaded config, with its folder
    code_digest varchar not null,         -- sha256 of wastewatch's code, SQL and catalogues, its schema and DuckDB's version
    ledger_digest varchar not null        -- sha256 of the ledger's files as loaded and of the days the retention dropped
);
