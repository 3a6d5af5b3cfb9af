-- grain: one row per distinct set of tags a billing line carries (across all sources and loads)
-- A billing line stores only its set's id (billing_lines.x_tag_set); the view billing_line_items joins the
-- set back. Normalising and storing each distinct set once instead of once per line keeps a MAP column,
-- a JSON column and five strings out of every line (0.45-0.55 s per million Parquet lines). Sets are
-- added by the billing readers and deleted once no stored line uses them (after a restatement or a
-- removed file); the canonical columns follow the `tags:` config of the latest billing ingest
-- (re-resolved on every one). A set is normalised once per version of wastewatch's normalising SQL
-- (x_normalizer), not again for every file that has it.
create table if not exists billing_tag_sets (
    x_tag_set ubigint primary key,        -- id of the tags as the file had them (x_tags_raw): tag_set_id, 64 bits of MD5 (older sets: DuckDB hash())
    tags map(varchar, varchar),           -- normalised keys (lower case, trimmed, provider prefixes removed)
    x_tags_raw json,                      -- the tags exactly as the file had them
    team varchar,                         -- canonical tags, resolved through the `tags:` config: `team`
    project varchar,                      -- canonical `project` tag
    owner varchar,                        -- canonical `owner` tag
    job_id varchar,                       -- canonical `job_id` tag
    x_host varchar,                       -- canonical `host` tag
    x_normalizer varchar                  -- digest of the SQL that normalised `tags` (tag_normalizer()); another is normalised again when a file with the set loads
);
