-- schema version 17: a nightly ingest with nothing new stops before Dagster when the config, code and ledger
-- are those the last full run built from, which ingest_state keeps (sql/raw/ingest_state.sql). A new table:
-- nothing existing changes, and an upgraded warehouse's first run is a full one.
create table if not exists ingest_state (
    job varchar primary key,
    recorded_at timestamp not null,
    config_digest varchar not null,
    code_digest varchar not null,
    ledger_digest varchar not null
);
