-- grain: one row per provider x instance family x region (or '*') x purchase option:
-- pipelines/catalog/gpu_purchase_discounts.csv, a temporary table of every connection; the discounts the
-- commitment and spot advice use where the bill shows none, each with its date and source
create or replace temp table gpu_purchase_discounts as
select provider, instance_family, region_id, option, discount, as_of, source, source_url
from read_csv($p, header = true, auto_detect = false, columns = {
    'provider': 'varchar', 'instance_family': 'varchar', 'region_id': 'varchar', 'option': 'varchar',
    'discount': 'double', 'as_of': 'date', 'source': 'varchar', 'source_url': 'varchar'
})
