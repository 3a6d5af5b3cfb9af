"""`engine: spark`: the heavy marts computed on Spark from the raw files where they lie (docs/scaling.md).

Spark reads the files the warehouse's ledger holds as loaded (local paths or s3a://), runs the Spark SQL
of `sql/spark/` and writes the mart as Hive-partitioned Parquet under `spark.marts_dir`; the warehouse
attaches it as a view over read_parquet. Importing this package needs pyspark (`wastewatch[spark]`).
"""
