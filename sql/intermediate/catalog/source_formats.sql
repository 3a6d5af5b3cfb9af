-- grain: one row per billing source format (a billing kind of pipelines/sources/registry.py, as
-- billing_line_items.x_source_format names it): pipelines/catalog/source_formats.csv, a temporary table of every
-- connection. unused_commitment_on_fee: the format has no line for a commitment's unused share; its recurring
-- fee line carries that share, amortised (commitment_lines reads it as the Unused line).
create or replace temp table source_formats as
select format, unused_commitment_on_fee, description
from read_csv($p, header = true, auto_detect = false, columns = {
    'format': 'varchar', 'unused_commitment_on_fee': 'boolean', 'description': 'varchar'
})
