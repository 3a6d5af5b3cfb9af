-- grain: one row per log-storage usage-type pattern: pipelines/catalog/log_usage_types.csv, a temporary table of
-- every connection. `field` is what the pattern is matched against (usage_type: the CUR usage type; meter: the
-- Azure meter name or the GCP SKU description), `service` a pattern the line's service must match too. `kind`:
-- storage (stored log bytes, GB-months), retention (only the bytes kept past the provider's `included_days`,
-- GB-months), ingestion (ingested bytes, GB). The first matching pattern by priority wins.
create or replace temp table log_usage_types as
select *
from read_csv($p, header = true, auto_detect = false, delim = ',', quote = '"', escape = '"', columns = {
    'priority': 'integer', 'provider': 'varchar', 'field': 'varchar', 'pattern': 'varchar', 'service': 'varchar',
    'kind': 'varchar', 'included_days': 'integer', 'description': 'varchar'
})
