-- grain: one row per data-transfer usage-type pattern: pipelines/catalog/transfer_usage_types.csv, a temporary
-- table of every connection. `field` is what the pattern is matched against (usage_type: the CUR usage type;
-- meter: the Azure meter subcategory and name or the GCP SKU description); `source` and `destination` are a
-- region id, `code:N` (the AWS region code in capture group N), `line` (the line's region), `internet`, or
-- empty (not on the line). The first matching pattern by priority wins.
create or replace temp table transfer_usage_types as
select *
from read_csv($p, header = true, auto_detect = false, delim = ',', quote = '"', escape = '"', columns = {
    'priority': 'integer', 'provider': 'varchar', 'field': 'varchar', 'pattern': 'varchar',
    'direction': 'varchar', 'source': 'varchar', 'destination': 'varchar', 'description': 'varchar'
})
