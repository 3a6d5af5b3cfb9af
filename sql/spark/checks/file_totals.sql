-- grain: one row per billing file Spark read
-- depends_on: the temporary view `lines` (sql/spark/staging/<format>_line_items.sql)
-- What Spark read from each file: its lines and their billed and effective cost, compared with what the
-- warehouse's ledger landed from the same file (sql/spark/warehouse/billing_files.sql). A file changed
-- where it lies since it was ingested would otherwise be spread with contents the warehouse never saw.
-- tags_unknown counts the lines whose tags' text no tag set of the warehouse holds: Spark wrote the text
-- otherwise than the reader did, and those lines would lose their team, project and owner.
select
    source_file,
    count(*) as lines,
    cast(sum(billed_cost) as decimal(38, 12)) as billed_cost,
    cast(sum(effective_cost) as decimal(38, 12)) as effective_cost,
    count_if(tags_unknown) as tags_unknown
from lines
group by source_file
