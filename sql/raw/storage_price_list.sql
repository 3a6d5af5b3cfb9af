-- grain: one row per storage class with a fallback price in the config (`prices: storage_gb_month:`)
-- Refreshed by the storage readers on every ingest; marts use it only where the bill has no price.
create table if not exists storage_price_list (
    storage_class varchar primary key,
    price_per_gb_month decimal(28, 12) not null,  -- per GB-month, GB = 2^30 bytes (the unit storage is billed in)
    currency varchar not null,
    source varchar not null,              -- where the price comes from (the config file)
    updated_at timestamp not null
);
