-- grain: one row per billing line of the files Spark does not read where they lie
-- depends_on: billing_line_items
-- params: $file_ids (the ledger's ids of those files)
-- Handed to Spark as Parquet (pipelines/transform/spark/handover.py): the lines of bill formats Spark has
-- no reader for (Azure, Google Cloud), of files it cannot open as they lie (gzip named `.CSV.GZ`) and of
-- sources whose dates take their own options.date_format, as the warehouse holds them, with the columns
-- sql/spark/staging/<format>_line_items.sql gives (team, project and owner from the line's tag set).
select
    x_source_file as source_file,
    billed_cost,
    effective_cost,
    list_cost,
    billing_currency,
    charge_period_start,
    charge_period_end,
    billing_period_start,
    billing_period_end,
    x_billing_period,
    charge_category,
    service_category,
    provider_name,
    sub_account_id,
    region_id,
    service_name,
    resource_id,
    x_instance_type,
    team,
    project,
    owner,
    false as tags_unknown
from billing_line_items
where x_file_id in (select unnest($file_ids::varchar[]))
