-- grain: one row per GPU x hour x slice with telemetry samples, of the days Spark rolled up
-- depends_on: the Parquet Spark's roll-up wrote (pipelines/transform/spark/gpu_rollup.py)
-- params: $parquet (the build's files), $days (the days taken from it)
-- What pipelines.transform inserts into int_gpu_slices for the days Spark rolled up from the inputs they
-- still have (the roll-up stays a warehouse table: 60 times fewer rows than the samples at 1-minute
-- scrapes, refreshed by day in the mart's transaction, kept when the retention drops the samples).
select *
from read_parquet($parquet)
where list_contains($days, day)
