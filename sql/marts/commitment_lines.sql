-- grain: one row per billing line that used a commitment discount or paid for the part of one left unused
-- depends_on: billing_line_items
-- Reserved Instances, Savings Plans, Azure reservations and savings plans, FOCUS commitment discounts: the
-- lines of each commitment, used or unused, at their amortised (effective) cost. A FOCUS line says so in
-- CommitmentDiscountStatus. AWS CUR has no unused line: a Savings Plan's or Reserved Instance's recurring
-- fee line carries, amortised, the share of the commitment no usage took (its effective cost is what was
-- left unused of the commitment, SavingsPlanRecurringFee total minus used, RIFee unused upfront plus unused
-- recurring), so that line is the unused one. Other lines of a commitment (upfront purchases, fees already amortised into
-- usage) carry nothing unused and are left out.
-- Built by file (pipelines/transform/files.py): $files names the ingested files whose lines are built, and each
-- row keeps its x_file_id, so a file delivered again, or gone, rebuilds or drops its own rows only.
-- usage_status: Used | Unused (the commitment's share no usage took)
-- provider: provider_name of the line
-- account_id: sub_account_id, else billing_account_id
-- currency: billing_currency of the line
-- effective_cost: amortised cost of the line, in its currency
-- x_file_id: the file the line came from (ingest_files.file_id)
with lines as (
    select
        *,
        case
            when commitment_discount_status in ('Used', 'Unused') then commitment_discount_status
            -- formats whose recurring fee line carries a commitment's unused share (pipelines/catalog/source_formats.csv)
            when x_source_format in (select format from source_formats where unused_commitment_on_fee)
                and charge_category = 'Purchase'
                and charge_frequency = 'Recurring'
                then 'Unused'
        end as usage_status
    from billing_line_items
    where commitment_discount_id is not null and x_file_id in (select unnest($files::varchar[]))
)

select
    commitment_discount_id,
    commitment_discount_name,
    commitment_discount_type,
    commitment_discount_category,
    usage_status,
    provider_name as provider,
    coalesce(sub_account_id, billing_account_id) as account_id,
    region_id,
    team,
    project,
    owner,
    billing_currency as currency,
    charge_period_start,
    charge_period_end,
    effective_cost,
    x_source_format,
    x_source_file,
    x_source_row,
    x_file_id
from lines
where usage_status is not null
