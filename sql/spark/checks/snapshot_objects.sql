-- grain: one row per storage snapshot Spark read
-- depends_on: the temporary view `inventory_objects` (sql/spark/staging/s3_inventory_objects.sql)
-- How many objects (delete markers included) Spark read from each snapshot's data files, compared with what
-- the warehouse's ledger landed from it (sql/spark/warehouse/storage_snapshots.sql): a report changed where
-- it lies since it was ingested would otherwise give the mart objects the warehouse never saw.
select x_file_id, count(*) as objects
from inventory_objects
group by x_file_id
