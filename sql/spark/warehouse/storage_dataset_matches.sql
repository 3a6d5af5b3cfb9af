-- grain: as sql/marts/storage_dataset_matches.sql
-- depends_on: the Parquet Spark wrote (sql/marts/storage_dataset_matches.sql run on Spark)
-- storage_dataset_matches when `engine: spark`: the duplicate candidates as Spark wrote them (Parquet
-- partitioned by bucket_part=<the first dataset's bucket>), read where they lie.
-- DuckDB takes no parameters in a view's body: `$parquet` is replaced by the build's files as a quoted
-- SQL string (pipelines/transform/spark/builds.py).
create or replace view storage_dataset_matches as
select * exclude (bucket_part)
from read_parquet($parquet, hive_partitioning = true, hive_types = {'bucket_part': varchar})
