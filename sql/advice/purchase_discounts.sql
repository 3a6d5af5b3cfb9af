-- grain: one row per catalogue discount (pipelines/catalog/gpu_purchase_discounts.csv)
-- depends_on: gpu_purchase_discounts (a temporary catalogue table of every connection)
-- The dated, cited discounts off on-demand for a 1-year commitment and for spot, where the bill shows none.
select provider, instance_family, region_id, option, discount, strftime(as_of, '%Y-%m-%d') as as_of, source, source_url
from gpu_purchase_discounts
order by provider, instance_family, region_id, option
