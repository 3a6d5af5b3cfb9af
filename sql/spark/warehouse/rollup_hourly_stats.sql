-- grain: one row per GPU per UTC hour pre-aggregated by a metrics store, of the days to roll up
-- depends_on: gpu_hourly_stats
-- params: $days
-- Handed to Spark as Parquet (pipelines/transform/spark/handover.py; an hour's row stands for its samples:
-- they are few); labels as text.
select * exclude (labels), labels::varchar as labels_text
from gpu_hourly_stats
where list_contains($days, x_hour_date)
