-- grain: one row per AWS Cost and Usage Report line item (CUR 2.0 or legacy) of the billing files the
--   warehouse's ledger holds as loaded
-- depends_on: the temporary views `cur_raw` (the CUR columns as sql/staging/stg_aws__cur2.sql names them: a
--             CSV's as text, a Parquet file's figures and times in their own types; tags_raw, the tags' text
--             as the warehouse's tag sets hold it; _file, the ledger's uri of the file;
--             pipelines/transform/spark/bill_cur.py), `cur_categories` (service, service_category: the
--             catalogue's AWS services), `tag_sets` (raw, team, project, owner: billing_tag_sets)
-- The columns cost_hourly reads, derived as stg_aws__cur2.sql derives them: billed cost the net unblended
-- cost else the unblended cost; effective cost the amortised cost per line item type; split cost allocation
-- rows 0 (their parent instance's line has the cost); list cost the public on-demand cost else the billed
-- cost; ANSI casts, so a bad value fails the job; timestamps as UTC wall time (TIMESTAMP_NTZ). Spark SQL's
-- parameters are `:name`.
with typed as (
    select
        _file as source_file,
        line_item_line_item_type as line_type,
        split_line_item_parent_resource_id is not null as is_split,
        cast(to_timestamp_ltz(line_item_usage_start_date) as timestamp_ntz) as charge_period_start,
        cast(to_timestamp_ltz(line_item_usage_end_date) as timestamp_ntz) as charge_period_end,
        cast(to_timestamp_ltz(bill_billing_period_start_date) as timestamp_ntz) as billing_period_start,
        cast(to_timestamp_ltz(bill_billing_period_end_date) as timestamp_ntz) as billing_period_end,
        cast(line_item_unblended_cost as decimal(38, 12)) as unblended_cost,
        cast(line_item_net_unblended_cost as decimal(38, 12)) as net_unblended_cost,
        cast(pricing_public_on_demand_cost as decimal(38, 12)) as public_on_demand_cost,
        cast(savings_plan_savings_plan_effective_cost as decimal(38, 12)) as sp_effective_cost,
        cast(savings_plan_total_commitment_to_date as decimal(38, 12)) as sp_total_commitment,
        cast(savings_plan_used_commitment as decimal(38, 12)) as sp_used_commitment,
        cast(reservation_effective_cost as decimal(38, 12)) as ri_effective_cost,
        cast(reservation_unused_amortized_upfront_fee_for_billing_period as decimal(38, 12)) as ri_unused_upfront,
        cast(reservation_unused_recurring_fee as decimal(38, 12)) as ri_unused_recurring,
        nullif(regexp_replace(reservation_reservation_a_r_n, '^\\p{Zs}+|\\p{Zs}+$', ''), '') as ri_arn,
        upper(coalesce(nullif(line_item_currency_code, ''), :default_currency)) as billing_currency,
        nullif(line_item_usage_account_id, '') as sub_account_id,
        nullif(line_item_product_code, '') as product_code,
        line_item_usage_type as usage_type,
        nullif(line_item_resource_id, '') as resource_id,
        nullif(product_region_code, '') as region_id,
        nullif(product_product_name, '') as product_name,
        nullif(product_instance_type, '') as product_instance_type,
        tags_raw
    from cur_raw
),

costed as (
    select
        *,
        case
            when is_split then cast(0 as decimal(38, 12))
            else coalesce(net_unblended_cost, unblended_cost, cast(0 as decimal(38, 12)))
        end as billed_cost,
        cast(
            case
                when is_split then 0
                when line_type = 'SavingsPlanCoveredUsage' then coalesce(sp_effective_cost, 0)
                when line_type = 'SavingsPlanRecurringFee'
                    then coalesce(sp_total_commitment, 0) - coalesce(sp_used_commitment, 0)
                when line_type in ('SavingsPlanNegation', 'SavingsPlanUpfrontFee') then 0
                when line_type = 'DiscountedUsage' then coalesce(ri_effective_cost, 0)
                when line_type = 'RIFee' then coalesce(ri_unused_upfront, 0) + coalesce(ri_unused_recurring, 0)
                when line_type = 'Fee' and ri_arn is not null then 0
                else coalesce(net_unblended_cost, unblended_cost, 0)
            end as decimal(38, 12)
        ) as effective_cost
    from typed
)

select
    c.source_file,
    c.billed_cost,
    c.effective_cost,
    cast(coalesce(c.public_on_demand_cost, c.billed_cost) as decimal(38, 12)) as list_cost,
    c.billing_currency,
    c.charge_period_start,
    c.charge_period_end,
    c.billing_period_start,
    c.billing_period_end,
    date_format(coalesce(c.billing_period_start, c.charge_period_start), 'yyyy-MM') as x_billing_period,
    case
        when c.line_type = 'Tax' then 'Tax'
        when c.line_type in ('Fee', 'RIFee', 'SavingsPlanUpfrontFee', 'SavingsPlanRecurringFee') then 'Purchase'
        when c.line_type = 'Credit' then 'Credit'
        when c.line_type = 'Refund' then 'Adjustment'
        else 'Usage'
    end as charge_category,
    coalesce(cat.service_category, 'Other') as service_category,
    'AWS' as provider_name,
    c.sub_account_id,
    c.region_id,
    coalesce(c.product_name, c.product_code) as service_name,
    c.resource_id,
    coalesce(
        c.product_instance_type,
        nullif(
            regexp_extract(
                coalesce(c.usage_type, ''), '(?:Box|Spot|DedicatedUsage|HostUsage)[^:]*:([a-z0-9-]+\\.[a-z0-9]+)$', 1
            ),
            ''
        )
    ) as x_instance_type,
    t.team,
    t.project,
    t.owner,
    c.tags_raw is not null and t.raw is null as tags_unknown
from costed as c
left join cur_categories as cat on cat.service = c.product_code
left join tag_sets as t on t.raw = c.tags_raw
