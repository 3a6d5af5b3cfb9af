-- grain: as sql/marts/cost_hourly.sql
-- depends_on: the Parquet Spark wrote (sql/spark/marts/cost_hourly_billed.sql), cost_hourly_modelled
-- cost_hourly when `engine: spark`: the bill's spread Spark wrote as Parquet partitioned by month=yyyy-MM,
-- read where it lies, and the modelled hosts' hours (cost_hourly_modelled, a table of this warehouse).
-- DuckDB takes no parameters in a view's body: `$parquet` is replaced by the build's folder as a quoted
-- SQL string (pipelines/transform/spark/cost_hourly.py).
create or replace view cost_hourly as
select * exclude (month) from read_parquet($parquet, hive_partitioning = true)
union all
select * from cost_hourly_modelled
