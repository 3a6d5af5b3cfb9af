-- grain: as sql/marts/storage_objects_current.sql
-- depends_on: the Parquet Spark wrote (sql/spark/marts/storage_objects_current.sql)
-- storage_objects_current when `engine: spark`: the newest snapshot of each bucket with its lineage, as
-- Spark wrote it (Parquet partitioned by bucket_part=<bucket>), read where it lies. The partition column
-- only names the folders: the rows carry their bucket as they have it.
-- DuckDB takes no parameters in a view's body: `$parquet` is replaced by the build's files as a quoted
-- SQL string (pipelines/transform/spark/builds.py).
create or replace view storage_objects_current as
select * exclude (bucket_part)
from read_parquet($parquet, hive_partitioning = true, hive_types = {'bucket_part': varchar})
