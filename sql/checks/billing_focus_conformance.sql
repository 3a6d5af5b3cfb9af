-- FOCUS 1.2 conformance of billing_line_items (pipelines/ingest/billing/checks.py; the report's data-quality
-- section runs it over one week): per source, rule and billing currency, the lines that break a rule of the
-- spec that matters for money, and the spend they carry (absolute effective cost, so credits count), beside
-- the source's own lines and spend. Rules (FOCUS 1.2 column requirements):
--   charge_category     ChargeCategory is one of Usage, Purchase, Tax, Credit, Adjustment (never null)
--   charge_class        ChargeClass is null or Correction
--   service_category    ServiceCategory is one of the allowed values (never null)
--   service_subcategory ServiceSubcategory is an allowed subcategory of the line's ServiceCategory (never null)
--   pricing_category    PricingCategory is Standard, Dynamic, Committed or Other; null on Tax lines, set on
--                       Usage and Purchase lines that are not corrections
--   commitment_discount CommitmentDiscountCategory/Type/Status/Name null without a CommitmentDiscountId; with
--                       one, Category is Spend or Usage and Type is set; Status is Used or Unused, set on
--                       Usage lines of a commitment and null on other charge categories
--   charge_period       ChargePeriodStart < ChargePeriodEnd, both inside [BillingPeriodStart, BillingPeriodEnd)
--   cost_not_null       BilledCost and EffectiveCost are not null
--   list_contracted     ListCost and ContractedCost are not null
--   cost_sign           ListCost and ContractedCost do not have the opposite sign of BilledCost
-- params: $subcategories_csv (pipelines/catalog/focus_service_subcategories.csv), $window_start and
--         $window_end (NULL for every line; else the lines whose charge period overlaps the window)
with allowed as (
    select service_category, service_subcategory
    from read_csv($subcategories_csv, header = true, all_varchar = true)
),

lines as (
    select
        b.x_source_name as source,
        b.billing_currency as currency,
        abs(coalesce(b.effective_cost, b.billed_cost, 0)) as spend,
        coalesce(b.charge_category, '') not in ('Usage', 'Purchase', 'Tax', 'Credit', 'Adjustment')
            as charge_category,
        coalesce(b.charge_class <> 'Correction', false) as charge_class,
        b.service_category is null or b.service_category not in (select service_category from allowed)
            as service_category,
        a.service_subcategory is null as service_subcategory,
        coalesce(b.pricing_category not in ('Standard', 'Dynamic', 'Committed', 'Other'), false)
        or (b.charge_category = 'Tax' and b.pricing_category is not null)
        or (
            b.charge_category in ('Usage', 'Purchase') and b.charge_class is null and b.pricing_category is null
        ) as pricing_category,
        case
            when b.commitment_discount_id is null
                then b.commitment_discount_category is not null or b.commitment_discount_type is not null
                or b.commitment_discount_status is not null or b.commitment_discount_name is not null
            else coalesce(b.commitment_discount_category not in ('Spend', 'Usage'), true)
                or b.commitment_discount_type is null
                or coalesce(b.commitment_discount_status not in ('Used', 'Unused'), false)
                or (b.charge_category = 'Usage' and b.commitment_discount_status is null)
                or (b.charge_category <> 'Usage' and b.commitment_discount_status is not null)
        end as commitment_discount,
        coalesce(
            not (
                b.charge_period_start < b.charge_period_end
                and b.charge_period_start >= b.billing_period_start
                and b.charge_period_end <= b.billing_period_end
            ),
            true
        ) as charge_period,
        b.billed_cost is null or b.effective_cost is null as cost_not_null,
        b.list_cost is null or b.contracted_cost is null as list_contracted,
        coalesce(sign(b.list_cost) * sign(b.billed_cost) < 0, false)
        or coalesce(sign(b.contracted_cost) * sign(b.billed_cost) < 0, false) as cost_sign
    from billing_line_items as b
    left join allowed as a
        on a.service_category = b.service_category and a.service_subcategory = b.service_subcategory
    where $window_start::timestamp is null
        or (b.charge_period_start < $window_end::timestamp and b.charge_period_end > $window_start::timestamp)
),

totals as (
    select source, currency, count(*) as source_lines, sum(spend) as source_spend
    from lines
    group by source, currency
),

broken as (
    unpivot lines
    on charge_category, charge_class, service_category, service_subcategory, pricing_category,
    commitment_discount, charge_period, cost_not_null, list_contracted, cost_sign
    into name rule value is_broken
),

-- what each rule asks, as the report prints it
requirements (rule, requirement) as (
    values
    ('charge_category', 'ChargeCategory is Usage, Purchase, Tax, Credit or Adjustment'),
    ('charge_class', 'ChargeClass is empty or Correction'),
    ('service_category', 'ServiceCategory is a FOCUS 1.2 category'),
    ('service_subcategory', 'ServiceSubcategory is a FOCUS 1.2 subcategory of the ServiceCategory'),
    ('pricing_category', 'PricingCategory is Standard, Dynamic, Committed or Other, set on usage and purchases, empty on tax'),
    ('commitment_discount', 'CommitmentDiscount columns agree with CommitmentDiscountId and ChargeCategory'),
    ('charge_period', 'ChargePeriodStart < ChargePeriodEnd, inside the billing period'),
    ('cost_not_null', 'BilledCost and EffectiveCost are set'),
    ('list_contracted', 'ListCost and ContractedCost are set'),
    ('cost_sign', 'ListCost and ContractedCost have the sign of BilledCost')
)

select
    t.source,
    t.currency,
    t.source_lines,
    t.source_spend::decimal(38, 6) as source_spend,
    b.rule,
    r.requirement,
    count(*) as lines,
    sum(b.spend)::decimal(38, 6) as spend
from broken as b
inner join totals as t on t.source = b.source and t.currency is not distinct from b.currency
inner join requirements as r on r.rule = b.rule
where b.is_broken
group by all
order by t.source, t.currency, spend desc, lines desc, b.rule
