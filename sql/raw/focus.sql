-- grain: one row per source line item (the rows of billing_line_items)
-- depends_on: billing_line_items
-- billing_line_items under FOCUS 1.2's own column names and types, for ad hoc SQL and for `wastewatch export
-- focus` (which writes what this view shows): the 57 FOCUS 1.2 columns in the spec's order, timestamps as
-- TIMESTAMPTZ (the stored UTC values, whatever the session's time zone), money as DECIMAL(38, 12), `Tags` as
-- the JSON object the source file gave (FOCUS forbids altering tags: the normalised map stays in
-- billing_line_items.tags), then wastewatch's `x_` columns. `x_Extra` holds the source's other columns as
-- JSON; the export writes each of its keys as a column of its own.
create view if not exists focus as
select
    availability_zone as AvailabilityZone,
    billed_cost as BilledCost,
    billing_account_id as BillingAccountId,
    billing_account_name as BillingAccountName,
    billing_account_type as BillingAccountType,
    billing_currency as BillingCurrency,
    timezone('UTC', billing_period_end) as BillingPeriodEnd,
    timezone('UTC', billing_period_start) as BillingPeriodStart,
    capacity_reservation_id as CapacityReservationId,
    capacity_reservation_status as CapacityReservationStatus,
    charge_category as ChargeCategory,
    charge_class as ChargeClass,
    charge_description as ChargeDescription,
    charge_frequency as ChargeFrequency,
    timezone('UTC', charge_period_end) as ChargePeriodEnd,
    timezone('UTC', charge_period_start) as ChargePeriodStart,
    commitment_discount_category as CommitmentDiscountCategory,
    commitment_discount_id as CommitmentDiscountId,
    commitment_discount_name as CommitmentDiscountName,
    commitment_discount_quantity as CommitmentDiscountQuantity,
    commitment_discount_status as CommitmentDiscountStatus,
    commitment_discount_type as CommitmentDiscountType,
    commitment_discount_unit as CommitmentDiscountUnit,
    consumed_quantity as ConsumedQuantity,
    consumed_unit as ConsumedUnit,
    contracted_cost as ContractedCost,
    contracted_unit_price as ContractedUnitPrice,
    effective_cost as EffectiveCost,
    invoice_id as InvoiceId,
    invoice_issuer_name as InvoiceIssuerName,
    list_cost as ListCost,
    list_unit_price as ListUnitPrice,
    pricing_category as PricingCategory,
    pricing_currency as PricingCurrency,
    pricing_currency_contracted_unit_price as PricingCurrencyContractedUnitPrice,
    pricing_currency_effective_cost as PricingCurrencyEffectiveCost,
    pricing_currency_list_unit_price as PricingCurrencyListUnitPrice,
    pricing_quantity as PricingQuantity,
    pricing_unit as PricingUnit,
    provider_name as ProviderName,
    publisher_name as PublisherName,
    region_id as RegionId,
    region_name as RegionName,
    resource_id as ResourceId,
    resource_name as ResourceName,
    resource_type as ResourceType,
    service_category as ServiceCategory,
    service_name as ServiceName,
    service_subcategory as ServiceSubcategory,
    sku_id as SkuId,
    sku_meter as SkuMeter,
    sku_price_details as SkuPriceDetails,
    sku_price_id as SkuPriceId,
    sub_account_id as SubAccountId,
    sub_account_name as SubAccountName,
    sub_account_type as SubAccountType,
    x_tags_raw as Tags,
    x_source_name as x_SourceName,         -- the source's name in wastewatch.yaml
    x_source_format as x_SourceFormat,     -- reader kind: focus | aws_cur | aws_cur2 | azure | gcp
    x_source_file as x_SourceFile,         -- the file the line was read from
    x_source_row as x_SourceRow,           -- 1-based data row in that file
    x_instance_type as x_InstanceType,     -- instance / VM type named by the bill
    x_gpu_count as x_GpuCount,             -- GPUs of the instance, when the bill says
    x_billing_period as x_BillingPeriod,   -- YYYY-MM of BillingPeriodStart: the export's partition key
    x_extra as x_Extra                     -- the source file's non-FOCUS columns, as JSON
from billing_line_items
