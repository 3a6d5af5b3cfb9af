-- grain: one row per mart rebuilt in full
-- The fingerprint of everything a mart was last built from (its SQL, and each table it reads through the
-- intermediate views): a run whose inputs fingerprint the same keeps the table instead of building it again.
create table if not exists int_mart_inputs (
    mart varchar primary key,             -- the mart's name (sql/marts/<mart>.sql)
    fingerprint ubigint not null,         -- of its SQL and of every table it reads
    built_at timestamp not null
)
