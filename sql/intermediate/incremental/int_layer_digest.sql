-- grain: one row per layer of derived objects (today: the intermediate views and roll-up tables)
-- The digest of the SQL a layer's objects were last created from: a run whose SQL digests the same, with
-- every object still there, leaves them as they are instead of creating them again before each mart.
create table if not exists int_layer_digest (
    layer varchar primary key,            -- 'intermediate'
    digest varchar not null,              -- sha256 of the schema version and the layer's SQL files
    built_at timestamp not null
)
