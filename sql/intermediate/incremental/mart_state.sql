-- grain: one row
-- depends_on: int_mart_inputs
-- What a mart built in full is before its build, in one query: the fingerprint of the inputs it was last
-- built from (null when none is stored), whether a relation of its name exists (a table, or the view over
-- Spark's Parquet it was with `engine: spark`) and whether that relation is a view.
select
    (select fingerprint from int_mart_inputs where mart = $mart) as fingerprint,
    exists (select 1 from information_schema.tables where table_name = $mart) as exists,
    exists (select 1 from duckdb_views() where view_name = $mart and not internal) as is_view
