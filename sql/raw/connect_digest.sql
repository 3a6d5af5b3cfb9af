-- grain: one row: what the last writable connect that checked the schema made this file agree with
-- A writable `connect` whose digest equals this row's, at today's schema version, skips the schema check, the
-- comments and the catalogue reload, which would find nothing to do (pipelines/warehouse.py `prepare`).
create table if not exists connect_digest (
    digest varchar not null,              -- sha256 of the schema version, the raw SQL, the catalogues, the code and billing_lines' columns
    recorded_at timestamp not null        -- when that connect recorded it (UTC)
);
