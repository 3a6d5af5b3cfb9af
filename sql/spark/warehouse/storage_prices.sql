-- grain: one row per (store, bucket, storage class) with a price, as sql/marts/storage_prices.sql
-- depends_on: storage_prices
-- Handed to Spark (the `storage_prices` view sql/marts/storage_dataset_matches.sql reads there): the columns
-- the duplicate candidates take their price from. A small table: buckets times storage classes.
select store, bucket, storage_class, price_per_gb_month, currency, price_source
from storage_prices
