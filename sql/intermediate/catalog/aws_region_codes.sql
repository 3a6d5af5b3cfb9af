-- grain: one row per AWS region billing code (USE1, EUC1, ...): pipelines/catalog/aws_region_codes.csv, a
-- temporary table of every connection
create or replace temp table aws_region_codes as
select code, region_id, region_name
from read_csv($p, header = true, auto_detect = false, columns = {
    'code': 'varchar', 'region_id': 'varchar', 'region_name': 'varchar'
})
